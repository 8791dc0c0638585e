"""pytorch_horovod.py and tensorflow_horovod.py under real Horovod launchers.

``horovodrun --gloo`` on one host and on two emulated hosts (loopback addresses reached through
a local ssh stand-in): each framework's job is stopped on one host and resumed to its end, the
PyTorch one on two emulated hosts. The mpirun SageMaker launches Horovod jobs with is the local
backend's (test_local_backend: test_horovod_under_sagemakers_mpirun_trains_and_saves_once).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from dataclasses import dataclass
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

pytest.importorskip("horovod.torch")

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
STEPS_PER_EPOCH = 512 // (2 * 16)
FRAMEWORKS = [
    pytest.param("torch", marks=pytest.mark.torch),
    pytest.param("tf", marks=pytest.mark.tf),
]
# Each framework's stopped and resumed jobs are made once, on one worker (xdist), for the two
# tests that read them.
ONE_WORKER_EACH = [
    pytest.param("torch", marks=[pytest.mark.torch, pytest.mark.xdist_group("horovod-torch")]),
    pytest.param("tf", marks=[pytest.mark.tf, pytest.mark.xdist_group("horovod-tf")]),
]


# The emulated hosts: this machine under two loopback addresses.
TWO_HOSTS = "localhost:1,127.0.0.2:1"
# Where each framework's resumed job runs (its stopped job runs on one host).
RESUMED_ON = {"torch": TWO_HOSTS, "tf": None}


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


def assert_trained_once(
    run: Run, base: Path, framework: str, steps: int, resuming: Run | None = None
) -> None:
    """``resuming``: the stopped job ``run`` resumed; the loss fell across both."""
    output = run.output
    metrics = metric_lines(output)
    assert metrics, output
    if resuming is not None:
        metrics = metric_lines(resuming.output) + metrics
    assert metrics[-1]["step"] == steps
    assert metrics[-1]["loss"] < metrics[0]["loss"], metrics
    checksums = weight_checksums(output)
    assert sorted(checksums) == [0, 1], output
    assert checksums[0] == checksums[1], "ranks ended with different weights"
    assert output.count("model saved to") == 1, "the model must be saved by one rank only"
    assert (base / "model" / MODEL_FILES[framework]).is_file()


def checkpoint_steps(directory: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1].split(".")[0]) for p in directory.glob("checkpoint-*"))


@dataclass(frozen=True)
class StoppedThenResumed:
    """A ``horovodrun --gloo`` job stopped by SIGTERM to one rank, what it had left when it
    ended, and the job that resumed it to the end of its epochs."""

    framework: str
    stopped: Run
    stopped_code: int
    stopped_at: int  # its newest checkpoint's step
    model_left: bool
    resumed: Run
    resumed_code: int
    base: Path
    epochs: int  # the resumed job's
    resumed_hosts: int  # the hosts the resumed job ran on


def stop_then_resume(tmp_path: Path, framework: str) -> StoppedThenResumed:
    args = ["--log_every", "4", "--checkpoint_every", "10"]
    run, base = launch(tmp_path, "first", horovodrun(), framework, ["--epochs", "100", *args])
    checkpoint_dir = base / "checkpoints"
    wait_for(lambda: any(checkpoint_dir.glob("checkpoint-*")), TIMEOUT, "a checkpoint", [run])
    ranks = rank_processes(run, SCRIPTS[framework])
    if sorted(ranks) != [0, 1]:
        run.kill()
        raise AssertionError(f"ranks {sorted(ranks)} found\n{describe([run])}")
    # SageMaker signals every process; signalling one shows the other stops with it.
    os.kill(ranks[1], signal.SIGTERM)
    [stopped_code] = wait_all([run], TIMEOUT)
    stopped_at = checkpoint_steps(checkpoint_dir)[-1]
    model_left = (base / "model" / MODEL_FILES[framework]).exists()
    # Two epochs, or more where the stop came late: two checkpoints (every 10 steps) after it.
    epochs = max(2, -(-(stopped_at + 20) // STEPS_PER_EPOCH))
    hosts = RESUMED_ON[framework]
    on_hosts = {}
    if hosts:  # rank 1's host is reached through the ssh stand-in
        ssh_dir = ssh_stand_in(tmp_path / "ssh")
        path = f"{ssh_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
        on_hosts = {"PATH": path, "OMP_NUM_THREADS": "1"}
    resumed, base = launch(
        tmp_path,
        "second",
        horovodrun(hosts),
        framework,
        ["--epochs", str(epochs), *args],
        **on_hosts,
    )
    [resumed_code] = wait_all([resumed], TIMEOUT)
    return StoppedThenResumed(
        framework,
        run,
        stopped_code,
        stopped_at,
        model_left,
        resumed,
        resumed_code,
        base,
        epochs,
        len(hosts.split(",")) if hosts else 1,
    )


@pytest.fixture(scope="module")
def made() -> dict[str, StoppedThenResumed | Exception]:
    return {}


@pytest.fixture(params=ONE_WORKER_EACH)
def runs(
    request: pytest.FixtureRequest,
    made: dict[str, StoppedThenResumed | Exception],
    tmp_path_factory: pytest.TempPathFactory,
) -> StoppedThenResumed:
    """A framework's job stopped by SIGTERM to one rank, then resumed to the end of its
    epochs: made once (a failure too, so the tests that share it do not repeat it)."""
    return shared_runs(request.param, made, tmp_path_factory)


def shared_runs(
    framework: str,
    made: dict[str, StoppedThenResumed | Exception],
    tmp_path_factory: pytest.TempPathFactory,
) -> StoppedThenResumed:
    if framework not in made:
        try:
            made[framework] = stop_then_resume(tmp_path_factory.mktemp(framework), framework)
        except Exception as error:
            made[framework] = error
    found = made[framework]
    if isinstance(found, Exception):
        raise found
    return found


def test_horovodrun_gloo_trains_and_saves_once(runs: StoppedThenResumed) -> None:
    run, base, framework = runs.resumed, runs.base, runs.framework
    assert runs.resumed_code == 0, describe([run])
    last_step = runs.epochs * STEPS_PER_EPOCH
    assert_trained_once(run, base, framework, steps=last_step, resuming=runs.stopped)
    for job, hosts in ((runs.stopped, 1), (run, runs.resumed_hosts)):
        assert f"2 processes on {hosts} host(s), Gloo" in job.output
        assert metric_lines(rank_lines(job.output, 1)) == [], "only rank 0 prints metric lines"
    # The newest two are kept (the stopped job's among the candidates); the torch loop also
    # keeps the last state.
    written = set(range(10, last_step + 1, 10)) | ({last_step} if framework == "torch" else set())
    suffix = "pt" if framework == "torch" else "npz"
    assert sorted(p.name for p in (base / "checkpoints").iterdir()) == [
        f"checkpoint-{step:09d}.{suffix}" for step in sorted(written)[-2:]
    ]


def test_sigterm_to_one_rank_checkpoints_then_resume_continues(runs: StoppedThenResumed) -> None:
    output, stopped_at = runs.stopped.output, runs.stopped_at
    assert runs.stopped_code != 0, output
    # The first rank to exit 143 ends the job (the launcher then terminates the other).
    assert re.search(r"Process \d exit with status code 143", output), output
    assert re.search(rf"(stopped at step |stopped by SIGTERM at step=){stopped_at}\b", output)
    assert not runs.model_left, "a stopped job must not save a final model"

    resumed = runs.resumed.output
    assert runs.resumed_code == 0, describe([runs.resumed])
    match = re.search(RESUMED[runs.framework], resumed)
    assert match and int(match.group(1)) == stopped_at, resumed
    metrics = metric_lines(resumed)
    assert stopped_at < metrics[0]["step"], "the resumed job began again from step 0"
    checksums = weight_checksums(resumed)
    assert checksums[0] == checksums[1]


@pytest.mark.torch
@pytest.mark.xdist_group("horovod-torch")
def test_horovodrun_gloo_on_two_emulated_hosts(
    made: dict[str, StoppedThenResumed | Exception], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The PyTorch job resumed on two emulated hosts (its training, weights and single save
    are checked in test_horovodrun_gloo_trains_and_saves_once[torch])."""
    runs = shared_runs("torch", made, tmp_path_factory)
    assert runs.resumed_code == 0, describe([runs.resumed])
    assert "2 processes on 2 host(s), Gloo" in runs.resumed.output
    assert_trained_once(
        runs.resumed, runs.base, "torch", steps=runs.epochs * STEPS_PER_EPOCH, resuming=runs.stopped
    )


@pytest.mark.torch
def test_collective_timeout_ends_a_job_whose_rank_hangs(tmp_path):
    """A frozen rank (SIGSTOP) makes the other's collectives time out instead of hang."""
    import psutil

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
        try:
            psutil.Process(ranks[0]).wait(TIMEOUT)
        except psutil.TimeoutExpired:
            raise AssertionError(f"rank 0 still waits\n{describe([run])}") from None
        # horovodrun then ends the job: it SIGTERMs the frozen rank (pending while it is
        # stopped), and SIGKILLs it after its grace period, which the test need not wait out.
        wait_for(lambda: sigterm_pending(ranks[1]), TIMEOUT, "horovodrun's SIGTERM", [run])
        os.kill(ranks[1], signal.SIGKILL)
        assert wait_all([run], TIMEOUT) != [0], describe([run])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(ranks[1], signal.SIGKILL)
    assert "Timed out" in run.output, run.output


def sigterm_pending(pid: int) -> bool:
    """Whether SIGTERM waits to be delivered to the (stopped) process ``pid``."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # gone: nothing left to wait for
    masks = re.findall(r"^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$", status, re.MULTILINE)
    return any(int(mask, 16) & (1 << (signal.SIGTERM - 1)) for mask in masks)
