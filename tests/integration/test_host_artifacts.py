"""What a local job keeps, as SageMaker keeps it: every host's model directory in one
model.tar.gz, and checkpoints synced to the store while the job runs, so that a re-run after
``smdist run`` was killed (kill -9) resumes from the newest complete one.

Both are proved by one 2-host DDP job (torchrun on every host) of a user's own rank script in
plain Python (``user_scripts/plain_checkpoints``), killed and run again (the module's fixture):
what is proved is what smdist syncs and packs, which no framework in the ranks changes.
"""

from __future__ import annotations

import json
import os
import signal
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import Run, assert_nothing_left, smdist_run, tar_names

# torchrun on every host; one worker runs the whole module, so its job is made once (xdist).
pytestmark = [pytest.mark.integration, pytest.mark.torch, pytest.mark.xdist_group("host_artifacts")]

SCRIPT = Path(__file__).resolve().parent / "user_scripts" / "plain_checkpoints"


def write_job(folder: Path, hyperparameters: dict[str, Any], **extra: Any) -> Path:
    job = {
        "name": "ddp-checkpoints",
        "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "code": {"source_dir": str(SCRIPT), "entry_point": "train.py"},
        "hyperparameters": hyperparameters,
        **extra,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def wait_for(condition, what: str, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s:\n{log.read_text()}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def killed_then_resumed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Run]:
    """A 2-host job killed (kill -9 of ``smdist run``) while rank 0 writes a checkpoint slowly,
    then the same command run again: (the test folder, the killed job's name, the second run).

    What must hold of the killed run before the second may start is asserted here: the
    checkpoints synced until then, and nothing left running."""
    folder = tmp_path_factory.mktemp("killed-then-resumed")
    hyperparameters = {"steps": 8, "checkpoint-every": 2, "step-seconds": 0.1, "slow-write-at": 6}
    checkpoint = {"s3_uri": "s3://bucket/checkpoints/ddp-checkpoints"}
    job = write_job(folder, hyperparameters, checkpoint=checkpoint)
    store = folder / ".smdist" / "checkpoints" / "ddp-checkpoints"
    # One process per host: what is synced and packed is each host's folder, whatever its ranks
    # (four ranks' files in one archive: test_emulated_hosts).
    command = ("--hosts", "2", "--processes-per-host", "1")

    process, log = smdist_run(job, folder, *command, start_only=True)
    wait_for(lambda: "checkpoint step=4 written" in log.read_text(), "checkpoint at step 4", log)
    wait_for(lambda: (store / "ckpt_4.pt").exists(), "ckpt_4.pt in the store", log)
    wait_for(lambda: "writing ckpt_6.pt slowly" in log.read_text(), "slow write", log)
    time.sleep(5)  # well past the settle interval: the half-written file rests, open
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    first = log.read_text()
    assert "[checkpoints]" in first and "ckpt_4.pt (algo-1)" in first, first
    assert sorted(path.name for path in store.iterdir()) == ["ckpt_2.pt", "ckpt_4.pt"]
    # smdist killed mid-training leaves nothing running: the hosts' init processes notice
    # their parent is gone and stop everything below them (this is the suite's test of that;
    # test_local_faults' docstring points here).
    assert_nothing_left(folder, wait=60)

    killed = sorted((folder / ".smdist" / "jobs").iterdir())[0].name
    return folder, killed, smdist_run(job, folder, *command, timeout=240)


def test_kill_9_of_smdist_run_then_the_same_command_resumes_from_the_synced_checkpoint(
    killed_then_resumed,
):
    folder, killed, second = killed_then_resumed
    assert second.returncode == 0, second.output
    # The killed job's hosts died with it; the folder of their network went with the next job.
    assert list(Path(tempfile.gettempdir()).glob(f"smdist-{killed}-*")) == []
    assert "rank 0: resumed from step 4 (ckpt_4.pt)" in second.output
    assert "checkpoint step=8 written" in second.output
    store = folder / ".smdist" / "checkpoints" / "ddp-checkpoints"
    assert "ckpt_8.pt" in [path.name for path in store.iterdir()]
    assert_nothing_left(folder)


def test_model_tar_holds_every_hosts_files_and_names_the_one_two_hosts_wrote(
    killed_then_resumed,
):
    # The resumed job's: every rank saves model_<rank>.pth at the end, every host config.json.
    folder, _, run = killed_then_resumed
    assert run.returncode == 0, run.output
    model = run.job_dir() / "output" / "model.tar.gz"
    names = [name for name in tar_names(model) if name != "."]
    assert sorted(names) == ["config.json", "model_0.pth", "model_1.pth"]
    with tarfile.open(model) as tar:
        config = json.load(tar.extractfile("config.json"))  # type: ignore[arg-type]
    assert config["saved_by"] == "algo-2"  # as SageMaker's local mode: the last host's copy
    [note] = [line for line in run.output.splitlines() if "more than one host" in line]
    assert "config.json (algo-1, algo-2: algo-2's copy packed)" in note
    assert "model_" not in note
    assert_nothing_left(folder)
