"""pytorch_horovod.py and tensorflow_horovod.py under real Horovod launchers.

``horovodrun --gloo`` on one host, on two emulated hosts (loopback addresses reached through a
local ssh stand-in), and a bare ``mpirun`` as SageMaker launches Horovod jobs (when the
installed Horovod has MPI).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path

import pytest
from multiprocess_runs import (
    ENTRY_POINTS,
    PYTHON,
    VENV_BIN,
    Run,
    clean_environ,
    describe,
    metric_lines,
    rank_processes,
    sagemaker_host,
    ssh_stand_in,
    start,
    wait_all,
    wait_for,
    weight_checksums,
)

hvd = pytest.importorskip("horovod.torch")

pytestmark = [pytest.mark.integration, pytest.mark.horovod]

TIMEOUT = 240
SCRIPTS = {
    "torch": ENTRY_POINTS / "pytorch_horovod.py",
    "tf": ENTRY_POINTS / "tensorflow_horovod.py",
}
MODEL_FILES = {"torch": "model.pt", "tf": "1/saved_model.pb"}
RESUMED = {
    "torch": r"resuming from checkpoint step=(\d+)",
    "tf": r"resuming from .* \(step (\d+)\)",
}
COMMON_ARGS = ["--samples", "512", "--batch_size", "16", "--learning_rate", "0.05"]
FRAMEWORKS = [
    pytest.param("torch", marks=pytest.mark.torch),
    pytest.param("tf", marks=pytest.mark.tf),
]


def horovodrun(hosts: str | None = None) -> list[str]:
    command = [str(VENV_BIN / "horovodrun"), "-np", "2", "--gloo"]
    if hosts:
        command += ["-H", hosts, "--network-interfaces", "lo"]
    return command


def launch(
    tmp_path: Path, name: str, launcher: list[str], framework: str, args: list[str], **extra: str
) -> tuple[Run, Path]:
    base = tmp_path / "algo-1" / "opt" / "ml"
    environ = clean_environ({**sagemaker_host(base, ["algo-1"], "algo-1"), **extra})
    command = [*launcher, PYTHON, str(SCRIPTS[framework]), *COMMON_ARGS, *args]
    return start(command, tmp_path / f"{name}.log", environ), base


def rank_lines(output: str, rank: int) -> str:
    """The lines Horovod's launcher tagged as coming from ``rank`` (``[1]<stdout>:...``)."""
    prefix = re.compile(rf"^\[{rank}\]<std(?:out|err)>:")
    return "\n".join(line for line in output.splitlines() if prefix.match(line))


def assert_trained_once(run: Run, base: Path, framework: str, steps: int) -> None:
    output = run.output
    metrics = metric_lines(output)
    assert metrics, output
    assert metrics[-1]["step"] == steps
    assert metrics[-1]["loss"] < metrics[0]["loss"], metrics
    checksums = weight_checksums(output)
    assert sorted(checksums) == [0, 1], output
    assert checksums[0] == checksums[1], "ranks ended with different weights"
    assert output.count("model saved to") == 1, "the model must be saved by one rank only"
    assert (base / "model" / MODEL_FILES[framework]).is_file()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_horovodrun_gloo_trains_and_saves_once(tmp_path, framework):
    run, base = launch(
        tmp_path,
        "train",
        horovodrun(),
        framework,
        ["--epochs", "2", "--log_every", "4", "--checkpoint_every", "10"],
    )
    assert wait_all([run], TIMEOUT) == [0], describe([run])
    assert_trained_once(run, base, framework, steps=2 * (512 // 32))
    assert "2 processes on 1 host(s), Gloo" in run.output
    assert metric_lines(rank_lines(run.output, 1)) == [], "only rank 0 prints metric lines"
    # The newest two are kept; the torch loop also keeps the last state (step 32).
    kept = (30, 32) if framework == "torch" else (20, 30)
    assert sorted(p.name for p in (base / "checkpoints").iterdir()) == [
        f"checkpoint-{step:09d}.{'pt' if framework == 'torch' else 'npz'}" for step in kept
    ]


@pytest.mark.torch
def test_horovodrun_gloo_on_two_emulated_hosts(tmp_path):
    ssh_dir = ssh_stand_in(tmp_path / "ssh")
    run, base = launch(
        tmp_path,
        "two-hosts",
        horovodrun("localhost:1,127.0.0.2:1"),
        "torch",
        ["--epochs", "1", "--log_every", "4"],
        PATH=f"{ssh_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        OMP_NUM_THREADS="1",
    )
    assert wait_all([run], TIMEOUT) == [0], describe([run])
    assert "2 processes on 2 host(s), Gloo" in run.output
    assert_trained_once(run, base, "torch", steps=512 // 32)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_bare_mpirun_as_sagemaker_launches_it(tmp_path, framework):
    if not hvd.mpi_built():
        pytest.skip("this Horovod was built without MPI (install with SMDIST_HOROVOD_MPI=1)")
    mpirun = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", "2", "--bind-to", "none"]
    run, base = launch(tmp_path, "mpirun", mpirun, framework, ["--epochs", "1", "--log_every", "4"])
    assert wait_all([run], TIMEOUT) == [0], describe([run])
    assert "2 processes on 1 host(s), MPI" in run.output
    assert_trained_once(run, base, framework, steps=512 // 32)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_sigterm_to_one_rank_checkpoints_then_resume_continues(tmp_path, framework):
    script = SCRIPTS[framework]
    long_run = ["--epochs", "100", "--log_every", "10", "--checkpoint_every", "10"]
    run, base = launch(tmp_path, "first", horovodrun(), framework, long_run)
    checkpoint_dir = base / "checkpoints"
    wait_for(lambda: any(checkpoint_dir.glob("checkpoint-*")), TIMEOUT, "a checkpoint", [run])
    ranks = rank_processes(run, script)
    assert sorted(ranks) == [0, 1], describe([run])
    # SageMaker signals every process; signalling one shows the other stops with it.
    os.kill(ranks[1], signal.SIGTERM)
    assert wait_all([run], TIMEOUT) != [0], describe([run])
    output = run.output
    # The first rank to exit 143 ends the job (the launcher then terminates the other).
    assert re.search(r"Process \d exit with status code 143", output), output
    steps = sorted(int(p.name.split("-")[1].split(".")[0]) for p in checkpoint_dir.iterdir())
    stopped_at = steps[-1]
    assert re.search(rf"(stopped at step |stopped by SIGTERM at step=){stopped_at}\b", output)
    assert not (base / "model" / MODEL_FILES[framework]).exists()

    resumed_run, base = launch(
        tmp_path, "second", horovodrun(), framework, [*long_run, "--max_steps", str(stopped_at + 5)]
    )
    assert wait_all([resumed_run], TIMEOUT) == [0], describe([resumed_run])
    match = re.search(RESUMED[framework], resumed_run.output)
    assert match and int(match.group(1)) == stopped_at, resumed_run.output
    metrics = metric_lines(resumed_run.output)
    assert metrics[-1]["step"] == stopped_at + 5
    checksums = weight_checksums(resumed_run.output)
    assert checksums[0] == checksums[1]


@pytest.mark.torch
def test_collective_timeout_ends_a_job_whose_rank_hangs(tmp_path):
    """A frozen rank (SIGSTOP) makes the other's collectives time out instead of hang."""
    script = SCRIPTS["torch"]
    args = ["--epochs", "100", "--checkpoint_every", "10"]
    run, base = launch(tmp_path, "hang", horovodrun(), "torch", args, SMDIST_COLLECTIVE_TIMEOUT="5")
    checkpoint_dir = base / "checkpoints"
    wait_for(lambda: any(checkpoint_dir.glob("checkpoint-*")), TIMEOUT, "a checkpoint", [run])
    ranks = rank_processes(run, script)
    assert sorted(ranks) == [0, 1], describe([run])
    os.kill(ranks[1], signal.SIGSTOP)
    try:
        # Without the timeout rank 0 would wait forever and this wait would fail.
        assert wait_all([run], TIMEOUT) != [0], describe([run])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(ranks[1], signal.SIGKILL)
    assert "Timed out" in run.output, run.output
