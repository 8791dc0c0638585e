"""The README's main command, run again: the second run trains or says plainly why not.

``examples/pytorch_ddp.yaml`` keeps checkpoints (``checkpoint.s3_uri``), so a second run
restores the first run's last checkpoint, which is already at the end: it trains nothing, says so
in one line with how to start fresh, prints no metric line for steps it did not take, and still
completes with the model. ``--fresh`` starts from scratch, and never loses the checkpoints kept
before: they are set aside once the new job has written its own.

The first run is made once (a module fixture); each test runs its second job in a copy of the
project it left.
"""

from __future__ import annotations

import re
import shutil
import tarfile
from pathlib import Path

import pytest
from local_jobs import EXAMPLES, Run, assert_nothing_left, smdist_run

# One worker runs the whole module, so the first run is made once (xdist).
pytestmark = [pytest.mark.integration, pytest.mark.torch, pytest.mark.xdist_group("rerun")]

MAIN_JOB = EXAMPLES / "pytorch_ddp.yaml"
# The example as it is (3 epochs, batch 64, 2 hosts) on fewer synthetic samples: 8 steps an epoch.
SMALL = ["-H", "samples=1024"]
ONE_RANK = ["-H", "samples=512"]  # one rank's share of SMALL: 8 steps an epoch too
LAST_STEP = 24


def metric_steps(output: str) -> list[int]:
    return [int(step) for step in re.findall(r"\[metrics\] step=(\d+)", output)]


def model_files(run) -> list[str]:
    with tarfile.open(run.job_dir() / "output" / "model.tar.gz") as tar:
        return tar.getnames()


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """The main command, run once in a project of its own."""
    project = tmp_path_factory.mktemp("first-run")
    run = smdist_run(MAIN_JOB, project, *SMALL)
    assert run.returncode == 0, run.output
    assert_nothing_left(project)
    return project, run


@pytest.fixture
def after_first_run(first_run: tuple[Path, Run], tmp_path: Path) -> Path:
    """A copy of the project the first run left (its checkpoints kept), for a second run."""
    shutil.copytree(first_run[0], tmp_path, dirs_exist_ok=True)
    return tmp_path


def test_the_main_command_run_twice_says_why_the_second_trains_nothing(first_run, after_first_run):
    first = first_run[1]
    assert metric_steps(first.output)[-1] == LAST_STEP
    assert f"checkpoint step={LAST_STEP} written" in first.output  # the last state is kept

    tmp_path = after_first_run
    second = smdist_run(MAIN_JOB, tmp_path, *SMALL)
    assert second.returncode == 0, second.output
    assert "Completed" in second.output
    assert "[metrics]" not in second.output and "nan" not in second.output
    [said] = [line for line in second.output.splitlines() if "nothing left to train" in line]
    assert f"is at epoch 3 of 3 (step {LAST_STEP})" in said
    assert f"checkpoint-{LAST_STEP:09d}.pt" in said
    assert "to start fresh run `smdist run --fresh ...`" in said and "raise epochs" in said
    [restored] = [line for line in second.output.splitlines() if "[prepare] restored" in line]
    assert "smdist run --fresh" in restored
    assert model_files(second) == ["model.pt"]  # the restored, trained model is kept
    assert_nothing_left(tmp_path)


def test_fresh_trains_from_scratch_and_sets_the_earlier_checkpoints_aside(after_first_run):
    tmp_path = after_first_run
    store = tmp_path / ".smdist" / "checkpoints" / "pytorch-ddp"
    earlier = {path.name: path.read_bytes() for path in store.iterdir()}
    assert f"checkpoint-{LAST_STEP:09d}.pt" in earlier

    # One host of one process on half the samples: the same steps and checkpoints (8 steps an
    # epoch) with one torchrun agent and one rank fewer; the store is the job's, whatever its
    # hosts and ranks.
    fresh = smdist_run(
        MAIN_JOB, tmp_path, *ONE_RANK, "--fresh", "--hosts", "1", "--processes-per-host", "1"
    )
    assert fresh.returncode == 0, fresh.output
    assert "resuming from checkpoint" not in fresh.output
    assert metric_steps(fresh.output)[0] < LAST_STEP and metric_steps(fresh.output)[-1] == LAST_STEP
    assert "[prepare] starting fresh: the 2 checkpoint file(s)" in fresh.output
    aside = store.with_name(f"pytorch-ddp.before-{fresh.job_dir().name}")
    assert {path.name: path.read_bytes() for path in aside.iterdir()} == earlier
    assert f"the earlier ones were moved to {aside}" in fresh.output
    assert sorted(path.name for path in store.iterdir()) == sorted(earlier)  # its own, anew
    set_aside_at = max(path.stat().st_mtime_ns for path in aside.iterdir())
    assert all(path.stat().st_mtime_ns > set_aside_at for path in store.iterdir())
    assert_nothing_left(tmp_path)


def test_a_fresh_job_that_writes_no_checkpoint_leaves_the_kept_ones_alone(after_first_run):
    tmp_path = after_first_run
    store = tmp_path / ".smdist" / "checkpoints" / "pytorch-ddp"
    earlier = {path.name: path.read_bytes() for path in store.iterdir()}

    # One host: the store is the job's, whatever its hosts, and the entry point fails alike; no
    # restart (the example's max_restarts: 1 would fail it a second time, writing nothing again).
    job = tmp_path / MAIN_JOB.name
    spec = MAIN_JOB.read_text()
    assert "max_restarts: 1" in spec
    job.write_text(spec.replace("max_restarts: 1", "max_restarts: 0"))
    failed = smdist_run(job, tmp_path, "-H", "batch_size=0", "--fresh", "--hosts", "1")
    assert failed.returncode == 1, failed.output
    assert "batch_size=0 must be greater than 0" in failed.output
    assert f"the job wrote no checkpoints; {store} keeps what it held" in failed.output
    assert {path.name: path.read_bytes() for path in store.iterdir()} == earlier
    kept = [path.name for path in store.parent.iterdir() if not path.name.startswith(".")]
    assert kept == ["pytorch-ddp"]  # nothing set aside (.pytorch-ddp.lock: who holds it)
    assert_nothing_left(tmp_path)
