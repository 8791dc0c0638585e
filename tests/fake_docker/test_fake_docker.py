"""The fake Docker CLI (tests/fake_docker), and SDK v3's own local mode training on it.

Without an SDK: the CLI's answers (``info`` with and without a daemon, ``images``/``pull``/
``login``, ``ps``/``network ls``, v3's ``run ... chmod`` fallback, unsupported calls), and
``compose up``/``down`` as the SDKs and a cleaning caller drive them: output, exit codes,
``--abort-on-container-exit``, SIGTERM (exit 130), a GPU service without the nvidia runtime,
a killed Compose, the silent (stuck) mode; and what each leaves recorded and running.

With SDK v3 (``.venv``): ``ModelTrainer(training_mode=Mode.LOCAL_CONTAINER)`` with the
``Torchrun`` driver trains a DDP script in a fake container on the stand-in DLC python
(``.ci/install-dlc-standin``; two containers: ``tests/sdk_lines/test_local_mode.py``). With
either SDK line: what its ``_get_compose_cmd_prefix`` makes of each ``docker compose version``
(SDK v2's end-to-end runs are in ``tests/aws/test_fake_docker_v2.py``, where the SDK v2 suite
runs).

The container tests need root (namespaces); each skips with the reason where it cannot run.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from fake_docker import FakeImage, calls, compose_runs, install, leftovers, pytorch_training_image
from fake_docker.support import (
    COMPOSE_VERSIONS,
    PYTORCH_IMAGE,
    ROLE,
    TRAIN_SCRIPT,
    aws_offline,
    sdk_compose_prefix,
    sdk_line,
    standin_python,
    why_no_containers,
    why_no_standin,
)

IMAGE = "fake.example/plain:1"
NOTHING = {"containers": [], "networks": [], "processes": []}


class Fake:
    """The fake on PATH for subprocesses: ``run("compose", ...)``; its state directory."""

    def __init__(self, tmp_path: Path, **options) -> None:
        self.tmp_path = tmp_path
        self.state = tmp_path / "docker-state"
        self.env = {**os.environ, **install(tmp_path / "bin", self.state, **options)}

    def run(self, *arguments: str, stdin: str | None = None, timeout: float = 120):
        return subprocess.run(
            ["docker", *arguments], env=self.env, capture_output=True, text=True,
            input=stdin, timeout=timeout,
        )  # fmt: skip

    def start(self, *arguments: str) -> subprocess.Popen:
        return subprocess.Popen(
            ["docker", *arguments], env=self.env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip

    def compose_file(self, services: dict, name: str = "proj") -> Path:
        """A compose file as SDK v2 writes one, in ``tmp/<name>/`` (the project's name)."""
        directory = self.tmp_path / name
        directory.mkdir(exist_ok=True)
        path = directory / "docker-compose.yaml"
        content = {
            "version": "2.3",
            "services": services,
            "networks": {"sagemaker-local": {"name": "sagemaker-local"}},
        }
        path.write_text(yaml.safe_dump(content))
        return path


def _service(alias: str, command: list[str], **extra) -> dict:
    return {
        "image": IMAGE, "command": command, "networks": {"sagemaker-local": {"aliases": [alias]}},
        "stdin_open": True, "tty": True, **extra,
    }  # fmt: skip


def _python(code: str) -> list[str]:
    return ["python", "-c", code]


@pytest.fixture
def containers_possible() -> None:
    why = why_no_containers()
    if why:
        pytest.skip(why)


@pytest.fixture
def fake(tmp_path, containers_possible) -> Fake:
    """The fake whose image is this test's own python (no torch needed)."""
    return Fake(tmp_path, images={IMAGE: FakeImage(python=sys.executable, env={"IMG": "yes"})})


def _wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ---- the CLI ------------------------------------------------------------------------------------
def test_info_without_and_with_a_daemon(tmp_path):
    down = Fake(tmp_path / "a", daemon=False)
    done = down.run("info", "--format", "{{.ServerVersion}}")
    assert done.returncode == 1
    assert "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" in done.stderr
    assert down.run("compose", "version").returncode == 0  # the client needs no daemon
    up = Fake(tmp_path / "b", runtimes=("runc", "nvidia"))
    assert up.run("info", "--format", "{{.ServerVersion}}").stdout == "27.3.1\n"
    runtimes = json.loads(up.run("info", "--format", "{{json .Runtimes}}").stdout)
    assert runtimes == {"runc": {"path": "runc"}, "nvidia": {"path": "nvidia-container-runtime"}}


def test_compose_versions(tmp_path):
    assert Fake(tmp_path / "a").run("compose", "version").stdout == (
        "Docker Compose version v2.29.7\n"
    )
    missing = Fake(tmp_path / "b", compose_version=None).run("compose", "version")
    assert missing.returncode == 1 and "'compose' is not a docker command" in missing.stderr
    legacy = Fake(tmp_path / "c", compose_version=None, legacy_compose=True)
    done = subprocess.run(["docker-compose", "version"], env=legacy.env, capture_output=True)
    assert done.stdout == b"docker-compose version 1.29.2, build 5becea4c\n"


def test_images_pull_login_and_the_call_log(tmp_path):
    image = FakeImage(python=sys.executable, present=False)
    fake = Fake(tmp_path, images={IMAGE: image}, pull_seconds=0.2)
    assert fake.run("images", "-q", IMAGE).stdout == ""
    assert fake.run("images", "-q", "nobody/has:this").stdout == ""
    started = time.monotonic()
    pulled = fake.run("pull", IMAGE)
    assert pulled.returncode == 0 and pulled.stdout == "" and time.monotonic() - started >= 0.2
    found = fake.run("images", "-q", IMAGE).stdout.strip()
    assert len(found) == 12 and int(found, 16) >= 0
    denied = fake.run("pull", "nobody/has:this")
    assert denied.returncode == 1 and "pull access denied" in denied.stderr
    login = fake.run("login", "https://x.dkr.ecr", "-u", "AWS", "--password-stdin", stdin="t")
    assert login.returncode == 0 and login.stdout == "Login Succeeded\n"
    odd = fake.run("buildx", "build", ".")
    assert odd.returncode == 1 and "unsupported call" in odd.stderr and "buildx" in odd.stderr
    assert calls(fake.state) == [
        ["docker", "images", "-q", IMAGE],
        ["docker", "images", "-q", "nobody/has:this"],
        ["docker", "pull", IMAGE],
        ["docker", "images", "-q", IMAGE],
        ["docker", "pull", "nobody/has:this"],
        ["docker", "login", "https://x.dkr.ecr", "-u", "AWS", "--password-stdin"],
        ["docker", "buildx", "build", "."],
    ]


def test_a_pull_dies_quietly_of_sigterm(tmp_path):
    image = FakeImage(python=sys.executable, present=False)
    fake = Fake(tmp_path, images={IMAGE: image}, pull_seconds=60)
    pull = fake.start("pull", IMAGE)
    _wait_for(lambda: any(c[:2] == ["docker", "pull"] for c in calls(fake.state)), what="pull")
    time.sleep(0.3)
    pull.terminate()
    assert pull.wait(10) == -signal.SIGTERM
    assert pull.stdout.read() == ""  # no traceback
    assert fake.run("images", "-q", IMAGE).stdout == ""


def test_run_chmod_is_v3s_cleanup_fallback(tmp_path):
    fake = Fake(tmp_path)
    target = tmp_path / "owned"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "f").write_text("x")
    (target / "sub").chmod(0o700)
    done = fake.run(
        "run", "--rm", "-v", f"{target}:/delete", IMAGE, "chmod", "-R", "777", "/delete"
    )
    assert done.returncode == 0, done.stderr
    assert (target / "sub").stat().st_mode & 0o777 == 0o777
    assert (target / "sub" / "f").stat().st_mode & 0o777 == 0o777
    assert fake.run("run", "--rm", IMAGE, "bash").returncode == 1


# ---- compose up / down --------------------------------------------------------------------------
def test_up_streams_prefixed_output_and_aborts_on_the_first_exit(fake):
    script = (
        "import os, socket, pathlib; "
        "print('host', socket.gethostname(), 'img', os.environ['IMG'], 'x', os.environ['X']); "
        "print('sees', socket.gethostbyname('algo-2-abcde')); "
        "print('keys', sorted(os.environ)); "
        "print('data', pathlib.Path('/opt/ml/input/data/train/f.txt').read_text()); "
        "pathlib.Path('/opt/ml/model/m').write_text('1'); raise SystemExit(3)"
    )
    data = fake.tmp_path / "data"
    data.mkdir()
    (data / "f.txt").write_text("payload")
    model = fake.tmp_path / "model"
    first = _service(
        "algo-1-abcde", _python(script), container_name="aaaaaaaaaa-algo-1-abcde",
        environment=["X=1", "AWS_REGION=us-west-2"],
        volumes=[f"{data}:/opt/ml/input/data/train:ro", f"{model}:/opt/ml/model"],
        shm_size="2gb",
    )  # fmt: skip
    second = _service(
        "algo-2-abcde", _python("import time; print('waiting', flush=True); time.sleep(60)"),
        container_name="bbbbbbbbbb-algo-2-abcde",
    )  # fmt: skip
    path = fake.compose_file({"algo-1-abcde": first, "algo-2-abcde": second})
    done = fake.run("compose", "-f", str(path), "up", "--build", "--abort-on-container-exit")

    assert done.returncode == 3, done.stdout + done.stderr
    out = done.stdout
    assert "aaaaaaaaaa-algo-1-abcde  | host " in out and " img yes x 1" in out
    assert "aaaaaaaaaa-algo-1-abcde  | sees 10.0.0.3" in out
    assert "aaaaaaaaaa-algo-1-abcde  | data payload" in out
    keys = ast.literal_eval(out.split("aaaaaaaaaa-algo-1-abcde  | keys ")[1].splitlines()[0])
    assert set(keys) <= {"AWS_REGION", "HOME", "HOSTNAME", "IMG", "LC_CTYPE", "PATH", "X"}
    assert "aaaaaaaaaa-algo-1-abcde exited with code 3" in out
    assert "bbbbbbbbbb-algo-2-abcde exited with code 143" in out
    assert " Container bbbbbbbbbb-algo-2-abcde  Stopping" in done.stderr
    assert (model / "m").read_text() == "1"
    # the hostname is a 12-hex container id, as Docker sets it
    hostname = out.split("| host ")[1].split()[0]
    assert len(hostname) == 12 and int(hostname, 16) >= 0

    left = leftovers(fake.state)
    assert [(c["name"], c["status"], c["exit_code"]) for c in left["containers"]] == [
        ("aaaaaaaaaa-algo-1-abcde", "exited", 3),
        ("bbbbbbbbbb-algo-2-abcde", "exited", 143),
    ]
    assert left["networks"] == ["sagemaker-local"] and left["processes"] == []
    assert left["containers"][0]["config"]["shm_size"] == "2gb"
    assert compose_runs(fake.state)[-1]["project"] == "proj"
    names = fake.run("ps", "-a", "--format", "{{.Names}} {{.State}}").stdout.splitlines()
    assert sorted(names) == ["aaaaaaaaaa-algo-1-abcde exited", "bbbbbbbbbb-algo-2-abcde exited"]
    assert len(fake.run("ps", "-a", "-q").stdout.split()) == 2
    assert fake.run("ps", "-q").stdout == ""  # none running
    networks = fake.run("network", "ls", "--format", "{{.Name}}").stdout.split()
    assert networks == ["bridge", "host", "none", "sagemaker-local"]

    downed = fake.run("compose", "-f", str(path), "down", "--remove-orphans", "--volumes")
    assert downed.returncode == 0, downed.stderr
    assert leftovers(fake.state) == NOTHING
    again = fake.run("compose", "-f", str(path), "down")  # nothing there: fine
    assert again.returncode == 0


def test_compose_interpolates_the_environment_as_compose_does(fake):
    # Neither SDK escapes "$" (as "$$") in the compose file it writes: Compose interpolates.
    show = "import os; print('env', [os.environ.get(k) for k in 'ABCD'])"
    service = _service(
        "algo-1", _python(show),
        environment=["A=$$literal", "B=${FAKE_UNSET_VARIABLE:-fallback}", "C=x$FAKE_UNSET_VARIABLE",
                     "D=${FAKE_SET_VARIABLE}"],
    )  # fmt: skip
    path = fake.compose_file({"algo-1": service})
    env = {**fake.env, "FAKE_SET_VARIABLE": "from-compose-env"}
    done = subprocess.run(
        ["docker", "compose", "-f", str(path), "up", "--abort-on-container-exit"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "env ['$literal', 'fallback', 'x', 'from-compose-env']" in done.stdout
    assert 'The "FAKE_UNSET_VARIABLE" variable is not set' in done.stderr


def test_sigterm_stops_every_container_and_exits_130(fake):
    # the second container's launcher starts a worker in a session of its own, as torchrun does
    worker = (
        "import subprocess, time; "
        "subprocess.Popen(['sleep', '300'], start_new_session=True); "
        "print('ready', flush=True); time.sleep(300)"
    )
    path = fake.compose_file({
        "one": _service("one", _python("import time; print('ready', flush=True); time.sleep(300)")),
        "two": _service("two", _python(worker)),
    }, name="v3root")  # fmt: skip
    up = fake.start("compose", "-f", str(path), "up", "--build", "--abort-on-container-exit")
    seen: list[str] = []

    def ready() -> bool:
        seen.append(up.stdout.readline())
        return sum("| ready" in line for line in seen) == 2

    _wait_for(ready, what="both containers ready")
    assert len(leftovers(fake.state)["processes"]) >= 3
    os.kill(up.pid, signal.SIGTERM)
    rest = up.stdout.read()
    assert up.wait(30) == 130
    assert "Gracefully stopping... (press Ctrl+C again to force)" in rest
    assert "one-1 exited with code 143" in rest and "two-1 exited with code 143" in rest
    left = leftovers(fake.state)
    assert [c["status"] for c in left["containers"]] == ["exited", "exited"]
    assert [c["name"] for c in left["containers"]] == ["v3root-one-1", "v3root-two-1"]
    assert left["processes"] == [] and left["networks"] == ["sagemaker-local"]
    assert fake.run("compose", "-f", str(path), "down").returncode == 0
    assert leftovers(fake.state) == NOTHING


def test_a_killed_compose_leaves_workers_that_down_removes(fake):
    worker = (
        "import subprocess, time; "
        "subprocess.Popen(['sleep', '300'], start_new_session=True); "
        "print('ready', flush=True); time.sleep(300)"
    )
    path = fake.compose_file({"algo-1": _service("algo-1", _python(worker))})
    up = fake.start("compose", "-f", str(path), "up", "--build", "--abort-on-container-exit")
    _wait_for(lambda: "| ready" in up.stdout.readline(), what="ready")
    os.kill(up.pid, signal.SIGKILL)
    up.wait(10)
    # the container's main process died with Compose; its worker (own session) did not
    _wait_for(lambda: len(leftovers(fake.state)["processes"]) == 1, what="only the worker")
    assert [c["status"] for c in leftovers(fake.state)["containers"]] == ["running"]
    assert fake.run("compose", "-f", str(path), "down", "-t", "1").returncode == 0
    assert leftovers(fake.state) == NOTHING


def test_a_gpu_service_without_the_nvidia_runtime_fails_as_docker_does(fake):
    gpu = {"resources": {"reservations": {"devices": [{"count": "all", "capabilities": ["gpu"]}]}}}
    path = fake.compose_file({"algo-1": _service("algo-1", _python("print('ran')"), deploy=gpu)})
    done = fake.run("compose", "-f", str(path), "up", "--build", "--abort-on-container-exit")
    assert done.returncode == 1
    assert (
        'Error response from daemon: could not select device driver "" with capabilities: [[gpu]]'
        in done.stderr
    )
    assert "ran" not in done.stdout
    assert [c["status"] for c in leftovers(fake.state)["containers"]] == ["created"]
    assert fake.run("compose", "-f", str(path), "down").returncode == 0
    assert leftovers(fake.state) == NOTHING
    with_nvidia = Fake(
        fake.tmp_path / "nv", images={IMAGE: FakeImage(python=sys.executable)},
        runtimes=("runc", "nvidia"),
    )  # fmt: skip
    path = with_nvidia.compose_file(
        {"algo-1": _service("algo-1", _python("print('ran')"), deploy=gpu)}
    )
    done = with_nvidia.run("compose", "-f", str(path), "up", "--abort-on-container-exit")
    assert done.returncode == 0 and "algo-1-1  | ran" in done.stdout, done.stderr


def test_silent_mode_ignores_sigterm_and_sigint_until_killed(tmp_path):
    fake = Fake(tmp_path, images={IMAGE: FakeImage(python=sys.executable)}, mode="silent")
    path = fake.compose_file({
        "algo-1": _service("algo-1", _python("print('ran')")),
        "algo-2": _service("algo-2", _python("print('ran')")),
    })  # fmt: skip
    up = fake.start("compose", "-f", str(path), "up", "--build", "--abort-on-container-exit")
    _wait_for(lambda: len(leftovers(fake.state)["containers"]) == 2, what="containers recorded")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        os.kill(up.pid, sig)
    time.sleep(1.0)
    assert up.poll() is None  # only SIGKILL ends it
    left = leftovers(fake.state)
    assert [c["status"] for c in left["containers"]] == ["created", "created"]
    assert left["networks"] == ["sagemaker-local"] and left["processes"] == []
    os.killpg(up.pid, signal.SIGKILL)
    assert up.wait(10) == -signal.SIGKILL
    assert up.stdout.read() == ""  # it printed nothing
    assert fake.run("compose", "-f", str(path), "down").returncode == 0
    assert leftovers(fake.state) == NOTHING


# ---- the SDK lines' compose detection -----------------------------------------------------------
@pytest.mark.parametrize(("version", "legacy", "expected"), COMPOSE_VERSIONS)
def test_the_installed_sdks_compose_prefix(tmp_path, monkeypatch, version, legacy, expected):
    line = sdk_line()
    if line not in expected:
        pytest.skip(f"no SageMaker Python SDK v2 or v3 here (found {line})")
    env = install(
        tmp_path / "bin", tmp_path / "state", compose_version=version, legacy_compose=legacy
    )
    monkeypatch.setenv("PATH", env["PATH"])
    assert sdk_compose_prefix(line) == expected[line]


# ---- SDK v3's local mode ------------------------------------------------------------------------
@pytest.fixture
def v3_fake(tmp_path, monkeypatch, containers_possible) -> Path:
    if sdk_line() != "3":
        pytest.skip("SDK v3 tests: run them in .venv (SDK v2's are in tests/aws)")
    why = why_no_standin()
    if why:
        pytest.skip(why)
    aws_offline(monkeypatch, tmp_path)
    state = tmp_path / "docker-state"
    image = pytorch_training_image(str(standin_python()))
    for key, value in install(tmp_path / "bin", state, images={PYTORCH_IMAGE: image}).items():
        monkeypatch.setenv(key, value)
    return state


@pytest.mark.integration
@pytest.mark.timeout(300)
# One container (a training job costs a minute per two): v3's own two-container run on this
# fake (SDK v3's compose file, the containers meeting over the network, the first exit
# stopping the others) is what tests/sdk_lines/test_local_mode.py's
# test_ddp_trains_and_packs_the_model[v3-2] runs, through smdist, in the same suite.
@pytest.mark.parametrize("hosts", [1])
def test_sdk_v3_model_trainer_local_container_trains_ddp_with_torchrun(
    v3_fake, tmp_path, monkeypatch, hosts, capfd
):
    from sagemaker.core.telemetry import telemetry_logging
    from sagemaker.core.training.configs import Compute, SourceCode
    from sagemaker.train import ModelTrainer
    from sagemaker.train.distributed import Torchrun
    from sagemaker.train.model_trainer import Mode

    sent: list[str] = []
    monkeypatch.setattr(telemetry_logging, "_requests_helper", lambda url, t: sent.append(url))
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text(TRAIN_SCRIPT)
    root = tmp_path / "v3root"
    root.mkdir()
    trainer = ModelTrainer(
        training_mode=Mode.LOCAL_CONTAINER,
        training_image=PYTORCH_IMAGE,
        source_code=SourceCode(source_dir=str(code), entry_script="train.py"),
        compute=Compute(instance_type="local_cpu", instance_count=hosts),
        distributed=Torchrun(),
        hyperparameters={"steps": 3},
        local_container_root=str(root),
        role=ROLE,
    )
    trainer.train()

    with tarfile.open(root / "compressed_artifacts" / "model.tar.gz") as archive:
        names = archive.getnames()
        ranks = json.load(archive.extractfile("ranks.json"))
    assert "model.pt" in names
    names = [f"algo-{index}" for index in range(1, hosts + 1)]
    total = hosts * (hosts + 1) // 2  # the all_reduce of rank + 1 over the ranks
    assert ranks == {"world": hosts, "sum": float(total), "hosts": names}
    output = capfd.readouterr().out
    # Rank 0's line only: with --abort-on-container-exit the first container to exit stops
    # the others, so a slower host may be stopped before it prints (the SDKs' own behaviour).
    assert f"rank 0/{hosts}: all_reduce sum {total}" in output, output[-3000:]
    assert all(f"{name}-1  | " in output for name in names)
    assert sent == []  # telemetry off: nothing left for AWS
    left = leftovers(v3_fake)
    assert [c["name"] for c in left["containers"]] == [f"v3root-{name}-1" for name in names]
    assert left["networks"] == ["sagemaker-local"] and left["processes"] == []
    services = compose_runs(v3_fake)[-1]["services"]
    assert services["algo-1"]["entrypoint"][0] == "/bin/bash"
    # no sagemaker_session: v3 puts no AWS credentials into the compose file
    assert not any("AWS_ACCESS_KEY_ID" in e for s in services.values() for e in s["environment"])
    assert not any("down" in argv for argv in calls(v3_fake))
