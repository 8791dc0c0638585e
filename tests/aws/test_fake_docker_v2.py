"""SDK v2's own local mode trains end to end on the fake Docker CLI (tests/fake_docker).

The real ``sagemaker.pytorch.PyTorch`` estimator with a ``LocalSession`` and
``instance_type="local"`` generates its compose file and runs ``docker compose up``; the fake
runs each service as a container in namespaces, where the real sagemaker-training toolkit's
``train`` (on the stand-in DLC python, ``.ci/install-dlc-standin``: this environment has no
torch) runs a user's DDP script over gloo across the containers. No AWS call is made: the
image is "present", code and output are file://. What the SDK leaves behind is asserted too:
it never runs ``compose down``, so the stopped containers and the network stay.

SDK v2 only (tests/aws runs in .venv-v2; elsewhere the conftest skips it), root only.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from fake_docker import calls, compose_runs, install, leftovers, pytorch_training_image
from fake_docker.support import (
    COMPOSE_VERSIONS,
    PYTORCH_IMAGE,
    ROLE,
    TRAIN_SCRIPT,
    aws_offline,
    sdk_compose_prefix,
    standin_python,
    why_no_containers,
    why_no_standin,
)
from integration.torch_exit import EXIT_ABORT, past_torch_exit_aborts


def install_fake(directory: Path, monkeypatch) -> Path:
    """A fake Docker under ``directory`` on PATH, playing the PyTorch DLC; its state folder."""
    state = directory / "docker-state"
    image = pytorch_training_image(str(standin_python()))
    env = install(directory / "bin", state, images={PYTORCH_IMAGE: image})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return state


@pytest.fixture
def offline(tmp_path, monkeypatch) -> None:
    for why in (why_no_containers(), why_no_standin()):
        if why:
            pytest.skip(why)
    aws_offline(monkeypatch, tmp_path)


def _fit(tmp_path: Path, hosts: int) -> tuple[str, Path]:
    import sagemaker.local
    from sagemaker.pytorch import PyTorch

    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text(TRAIN_SCRIPT)
    containers = tmp_path / "containers"
    containers.mkdir()
    session = sagemaker.local.LocalSession()
    session.config = {
        "local": {
            "local_code": True,
            "container_root": str(containers),
            # merged into every service by the SDK
            "container_config": {"shm_size": "2gb"},
        }
    }
    estimator = PyTorch(
        entry_point="train.py",
        source_dir=str(code),
        role=ROLE,
        instance_count=hosts,
        instance_type="local",
        framework_version="2.5",
        py_version="py311",
        image_uri=PYTORCH_IMAGE,
        hyperparameters={"steps": 3},
        output_path=f"file://{tmp_path / 'out'}",
        sagemaker_session=session,
    )
    estimator.fit(wait=True)
    return estimator.model_data, containers


def _model_files(model_data: str) -> dict[str, bytes]:
    assert model_data.startswith("file://"), model_data
    with tarfile.open(model_data[len("file://") :]) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("hosts", [2, 1])
def test_sdk_v2_local_mode_trains_ddp_across_fake_containers(
    offline, tmp_path, monkeypatch, hosts, capfd
):
    def attempt(number: int) -> tuple[Path, str | None, Path | None, str]:
        """A fresh fake Docker and a fit; (its state, the model, the containers, the output)."""
        work = tmp_path / f"attempt-{number}"
        work.mkdir()
        fake = install_fake(work, monkeypatch)
        try:
            model_data, containers = _fit(work, hosts)
        except RuntimeError:  # compose exited non-zero: a container failed
            return fake, None, None, capfd.readouterr().out
        return fake, model_data, containers, capfd.readouterr().out

    def aborted_after_finishing(result: tuple[Path, str | None, Path | None, str]) -> bool:
        _, model_data, _, output = result
        finished = all(f"rank {r}/{hosts}: all_reduce sum" in output for r in range(hosts))
        return model_data is None and EXIT_ABORT.search(output) is not None and finished

    fake, model_data, containers, output = past_torch_exit_aborts(attempt, aborted_after_finishing)
    assert model_data is not None and containers is not None, output[-3000:]
    files = _model_files(model_data)
    assert "model.pt" in files
    ranks = json.loads(files["ranks.json"])
    assert ranks["world"] == hosts and ranks["sum"] == hosts * (hosts + 1) / 2
    assert all(host.startswith("algo-") for host in ranks["hosts"])
    # Rank 0's line only: with --abort-on-container-exit the first container to exit stops
    # the others, so a slower host may be stopped before it prints (the SDKs' own behaviour).
    assert f"rank 0/{hosts}: all_reduce sum" in output, output[-3000:]
    # compose-style prefixes: v2's container names are <10 random>-algo-K-<5 random>
    assert f"-algo-{hosts}-" in output and "  | " in output

    left = leftovers(fake)
    # SDK v2 never runs `compose down`: the containers stay (stopped), and the network.
    assert [c["status"] for c in left["containers"]] == ["exited"] * hosts
    # --abort-on-container-exit: the first container to finish (exit 0, compose's exit code)
    # stops the others; one still finishing its toolkit's teardown is SIGTERMed (143).
    codes = sorted(c["exit_code"] for c in left["containers"])
    assert codes[0] == 0 and set(codes) <= {0, 143}, codes
    assert left["networks"] == ["sagemaker-local"] and left["processes"] == []
    services = compose_runs(fake)[-1]["services"]
    assert sorted(s["shm_size"] for s in services.values()) == ["2gb"] * hosts
    assert all(s["command"] == "train" for s in services.values())
    # no AWS credentials were in the test's environment but dummy ones: the SDK wrote them
    # into the compose file (long-lived keys are passed to the containers in plain text)
    assert all("AWS_ACCESS_KEY_ID=testing" in s["environment"] for s in services.values())
    argvs = calls(fake)
    assert ["docker", "images", "-q", PYTORCH_IMAGE] in argvs
    assert not any("down" in argv for argv in argvs)
    assert not any(argv[:2] == ["docker", "pull"] for argv in argvs)

    # `compose down`, as a caller cleaning up after the SDK would, leaves nothing.
    (compose_file,) = containers.rglob("docker-compose.yaml")
    done = subprocess.run(
        ["docker", "compose", "-f", str(compose_file), "down", "--remove-orphans"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert leftovers(fake) == {"containers": [], "networks": [], "processes": []}


@pytest.mark.parametrize(("version", "legacy", "expected"), COMPOSE_VERSIONS)
def test_sdk_v2_compose_prefix(tmp_path, monkeypatch, version, legacy, expected):
    env = install(
        tmp_path / "bin", tmp_path / "state", compose_version=version, legacy_compose=legacy
    )
    monkeypatch.setenv("PATH", env["PATH"])
    assert sdk_compose_prefix("2") == expected["2"]
