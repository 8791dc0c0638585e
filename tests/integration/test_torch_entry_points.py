"""The four PyTorch entry points train with two ranks, launched as SageMaker launches them.

DDP and SMP v2 run under torchrun (one torchrun per emulated host), SDDP and SMP v1 under
mpirun (SageMaker's launcher for the smdistributed distributions). Each job must survive a
SIGTERM (checkpoint, exit, and resume from that checkpoint when started again) and, run on to
the end of its epochs, have lowered its loss, end with the same weights on every rank and save
the model once from the main rank. A SIGTERM ends the script with its own exit code 143.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from torch_harness import (
    ENTRY_POINTS,
    JOB_TIMEOUT,
    MARKER,
    Job,
    checksums,
    free_port,
    metric_lines,
    processes_with_marker,
    sagemaker_hosts,
    script_args,
    start_mpirun,
    start_torchrun,
    wait_for_checkpoint,
)

pytestmark = [pytest.mark.integration, pytest.mark.torch]

TRAINING = {
    "epochs": 3,
    "samples": 512,
    "batch_size": 16,
    "hidden_size": 64,
    "learning_rate": 0.05,
    "log_every": 5,
    "checkpoint_every": 10,
}
STOPPED = re.compile(r"stopped by SIGTERM at step=(\d+)")
# mpirun's report of the first rank that ended with a non-zero code (orte_abort_on_non_zero_status).
EXIT_CODE_REPORT = re.compile(r"exited with non-zero status.*?Exit code:\s+143\b", re.DOTALL)


@dataclass(frozen=True)
class EntryPoint:
    script: str
    start: Callable[..., Job]
    hyperparameters: dict
    data_parallel: int = 2  # replicas the two ranks form, each reading its own shard

    @property
    def steps_per_epoch(self) -> int:
        return TRAINING["samples"] // (self.data_parallel * TRAINING["batch_size"])


ENTRY_POINT_CASES = {
    "ddp-torchrun": EntryPoint("pytorch_ddp.py", start_torchrun, {}),
    "sddp-mpirun": EntryPoint("pytorch_sddp.py", start_mpirun, {}),
    # Two pipeline stages on two ranks are one model replica: SMP's dp_size() is 1.
    "smp_v1-mpirun": EntryPoint(
        "pytorch_smp_v1.py",
        start_mpirun,
        {"mp_parameters": {"partitions": 2, "microbatches": 4, "ddp": True}},
        data_parallel=1,
    ),
    # hybrid_shard_degree=1 keeps a full replica per rank, so equal checksums mean equal replicas.
    "smp_v2-torchrun": EntryPoint(
        "pytorch_smp_v2.py", start_torchrun, {"mp_parameters": {"hybrid_shard_degree": 1}}
    ),
}


@dataclass(frozen=True)
class StoppedThenResumed:
    """An entry point's run stopped by SIGTERM, what it had left when it ended, and the run
    that resumed it to the end of its epochs."""

    stopped: Job
    stop_step: int
    checkpoints_left: list[str]  # by the stopped run, before the resumed one started
    model_left: bool
    processes_left: list[int]
    resumed: Job
    epochs: int  # the resumed run's

    @property
    def metrics(self) -> list[dict[str, float]]:
        """The metric lines of both runs, in order: one training, interrupted once."""
        return metric_lines(self.stopped.output) + metric_lines(self.resumed.output)


def stop_then_resume(case: EntryPoint, root: Path) -> StoppedThenResumed:
    endless = {**TRAINING, **case.hyperparameters, "epochs": 10_000}
    stopped = case.start(root, case.script, endless, "stopped")
    checkpoint_dir = stopped.hosts[0].checkpoint_dir
    wait_for_checkpoint(stopped, checkpoint_dir)
    stopped.terminate()
    stopped.wait()
    match = STOPPED.search(stopped.output)
    assert match, stopped.output
    stop_step = int(match.group(1))
    left = sorted(path.name for path in checkpoint_dir.glob("checkpoint-*.pt"))
    model_left = (stopped.hosts[0].model_dir / "model.pt").exists()
    processes_left = processes_with_marker(stopped.marker)
    # The job's three epochs, or more where the stop came late: at least one more epoch after it.
    epochs = max(TRAINING["epochs"], stop_step // case.steps_per_epoch + 2)
    resumed = case.start(root, case.script, {**endless, "epochs": epochs}, "resumed").wait()
    assert resumed.returncodes == [0] * len(resumed.launchers), resumed.output
    return StoppedThenResumed(stopped, stop_step, left, model_left, processes_left, resumed, epochs)


# Each entry point's two runs are made once, on one worker (xdist), for all the tests below.
ONE_WORKER_EACH = [
    pytest.param(name, marks=pytest.mark.xdist_group(f"torch_entry_points-{name}"), id=name)
    for name in sorted(ENTRY_POINT_CASES)
]


@pytest.fixture(scope="module")
def made() -> dict[str, StoppedThenResumed | Exception]:
    return {}


@pytest.fixture(params=ONE_WORKER_EACH)
def runs(
    request: pytest.FixtureRequest,
    made: dict[str, StoppedThenResumed | Exception],
    tmp_path_factory: pytest.TempPathFactory,
) -> StoppedThenResumed:
    """An entry point stopped by SIGTERM, then resumed to the end of its epochs: made once
    (a failure too, so the tests that share it do not repeat it)."""
    name = request.param
    if name not in made:
        try:
            made[name] = stop_then_resume(ENTRY_POINT_CASES[name], tmp_path_factory.mktemp(name))
        except Exception as error:
            made[name] = error
    found = made[name]
    if isinstance(found, Exception):
        raise found
    return found


def case_of(request: pytest.FixtureRequest) -> EntryPoint:
    return ENTRY_POINT_CASES[request.node.callspec.params["runs"]]


@pytest.mark.smoke
def test_loss_falls(runs: StoppedThenResumed, request: pytest.FixtureRequest) -> None:
    lines = runs.metrics
    assert len(lines) >= 5, runs.resumed.output
    first, last = lines[0]["loss"], lines[-1]["loss"]
    assert last < 0.9 * first, f"loss went from {first} to {last}:\n{runs.resumed.output}"
    # epochs x 512 samples / (replicas x 16): 16 steps an epoch with two replicas, 32 with one
    assert lines[-1]["step"] == runs.epochs * case_of(request).steps_per_epoch


def test_every_rank_ends_with_identical_weights(runs: StoppedThenResumed) -> None:
    digests = checksums(runs.resumed.output)
    assert sorted(digests) == [0, 1], runs.resumed.output
    assert digests[0] == digests[1], runs.resumed.output


def test_the_model_is_saved_once_by_the_main_rank(runs: StoppedThenResumed) -> None:
    import torch

    from smdist.runtime.torch_training import build_classifier

    resumed = runs.resumed
    assert resumed.output.count("model saved to") == 1, resumed.output
    first, second = resumed.hosts
    assert (first.model_dir / "model.pt").is_file()
    if first.model_dir != second.model_dir:
        assert not (second.model_dir / "model.pt").exists()
    weights = torch.load(first.model_dir / "model.pt", weights_only=True)
    build_classifier(32, 4, TRAINING["hidden_size"]).load_state_dict(weights)


def test_a_sigterm_run_checkpoints_and_the_next_run_resumes_there(
    runs: StoppedThenResumed,
) -> None:
    stop_step = runs.stop_step
    assert runs.checkpoints_left[-1] == f"checkpoint-{stop_step:09d}.pt", runs.stopped.output
    assert not runs.model_left, "a run stopped by SIGTERM saved the model"
    assert not runs.processes_left
    resumed = runs.resumed.output
    assert f"resuming from checkpoint step={stop_step}" in resumed
    steps = [line["step"] for line in metric_lines(resumed)]
    assert stop_step < steps[0] <= stop_step + TRAINING["log_every"], resumed


@pytest.mark.parametrize(
    "runs", [p for p in ONE_WORKER_EACH if ENTRY_POINT_CASES[p.values[0]].start is start_mpirun],
    indirect=True,
)  # fmt: skip
def test_sigterm_exits_143_under_mpirun(runs: StoppedThenResumed) -> None:
    """The script's own exit code, as mpirun reports the first rank that ended non-zero (the
    stopped run's ranks get the SIGTERM themselves, see ``Job.terminate``): SageMaker runs the
    smdistributed entry points under mpirun even on one host. The torchrun entry points' own
    code: test_sigterm_exits_143_after_writing_a_checkpoint (torchrun ends with its own)."""
    assert EXIT_CODE_REPORT.search(runs.stopped.output), runs.stopped.output


# The mpirun entry points' exit code and stop checkpoint come from their stopped runs
# (test_sigterm_exits_143_under_mpirun, test_a_sigterm_run_checkpoints_and_the_next_...).
TORCHRUN_SCRIPTS = sorted(
    {case.script for case in ENTRY_POINT_CASES.values() if case.start is start_torchrun}
)


@pytest.mark.parametrize("script", TORCHRUN_SCRIPTS)
def test_sigterm_exits_143_after_writing_a_checkpoint(script: str, tmp_path: Path) -> None:
    """A single process (``python script.py``, as SageMaker runs a one-host job) so the exit
    code is the script's own, not a launcher's."""
    host = sagemaker_hosts(tmp_path, {}, hosts=("127.0.0.1",))[0]
    env = {**host.env, "MASTER_PORT": str(free_port()), MARKER: "single-" + script}
    log = tmp_path / "run.log"
    hyperparameters = {**TRAINING, "epochs": 10_000}
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, str(ENTRY_POINTS / script), *script_args(hyperparameters)],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    job = Job([process], [log], env[MARKER], [host])
    wait_for_checkpoint(job, host.checkpoint_dir)
    os.kill(process.pid, signal.SIGTERM)
    job.wait(JOB_TIMEOUT)
    assert process.returncode == 143, job.output
    match = STOPPED.search(job.output)
    assert match, job.output
    assert (host.checkpoint_dir / f"checkpoint-{int(match.group(1)):09d}.pt").is_file()
