"""The four PyTorch entry points train with two ranks, launched as SageMaker launches them.

DDP and SMP v2 run under torchrun (one torchrun per emulated host), SDDP and SMP v1 under
mpirun (SageMaker's launcher for the smdistributed distributions). Each job must lower its
loss, end with the same weights on every rank, save the model once from the main rank, and
survive a SIGTERM: checkpoint, exit, and resume from that checkpoint when started again.
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

# One worker runs the whole module, so each entry point's finished run is made once (xdist).
pytestmark = [
    pytest.mark.integration,
    pytest.mark.torch,
    pytest.mark.xdist_group("torch_entry_points"),
]

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


@dataclass(frozen=True)
class EntryPoint:
    script: str
    start: Callable[..., Job]
    hyperparameters: dict
    data_parallel: int = 2  # replicas the two ranks form, each reading its own shard


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


@pytest.fixture(scope="module", params=sorted(ENTRY_POINT_CASES))
def trained(request, tmp_path_factory) -> Job:
    """One finished two-rank training run per entry point, shared by the tests below."""
    case = ENTRY_POINT_CASES[request.param]
    root = tmp_path_factory.mktemp(request.param)
    job = case.start(root, case.script, {**TRAINING, **case.hyperparameters}, "train")
    job.wait()
    assert job.returncodes == [0] * len(job.launchers), job.output
    return job


@pytest.mark.smoke
def test_loss_falls(trained: Job, request: pytest.FixtureRequest) -> None:
    lines = metric_lines(trained.output)
    assert len(lines) >= 5, trained.output
    first, last = lines[0]["loss"], lines[-1]["loss"]
    assert last < 0.9 * first, f"loss went from {first} to {last}:\n{trained.output}"
    replicas = ENTRY_POINT_CASES[request.node.callspec.params["trained"]].data_parallel
    # 3 epochs x 512 samples / (replicas x 16): 48 steps with two replicas, 96 with one
    assert lines[-1]["step"] == 3 * 512 // (replicas * 16)


def test_every_rank_ends_with_identical_weights(trained: Job) -> None:
    digests = checksums(trained.output)
    assert sorted(digests) == [0, 1], trained.output
    assert digests[0] == digests[1], trained.output


def test_the_model_is_saved_once_by_the_main_rank(trained: Job) -> None:
    import torch

    from smdist.runtime.torch_training import build_classifier

    assert trained.output.count("model saved to") == 1, trained.output
    first, second = trained.hosts
    assert (first.model_dir / "model.pt").is_file()
    if first.model_dir != second.model_dir:
        assert not (second.model_dir / "model.pt").exists()
    weights = torch.load(first.model_dir / "model.pt", weights_only=True)
    build_classifier(32, 4, TRAINING["hidden_size"]).load_state_dict(weights)


@pytest.mark.parametrize("name", sorted(ENTRY_POINT_CASES))
def test_a_sigterm_run_checkpoints_and_the_next_run_resumes_there(name: str, tmp_path) -> None:
    case = ENTRY_POINT_CASES[name]
    endless = {**TRAINING, **case.hyperparameters, "epochs": 10_000}
    stopped = case.start(tmp_path, case.script, endless, "stopped")
    checkpoint_dir = stopped.hosts[0].checkpoint_dir
    wait_for_checkpoint(stopped, checkpoint_dir)
    stopped.terminate()
    stopped.wait()

    match = STOPPED.search(stopped.output)
    assert match, stopped.output
    stop_step = int(match.group(1))
    newest = sorted(checkpoint_dir.glob("checkpoint-*.pt"))[-1]
    assert newest.name == f"checkpoint-{stop_step:09d}.pt"
    assert not (stopped.hosts[0].model_dir / "model.pt").exists()
    assert not processes_with_marker(stopped.marker)

    resumed = case.start(tmp_path, case.script, {**endless, "max_steps": stop_step + 10}, "resumed")
    resumed.wait()
    assert resumed.returncodes == [0] * len(resumed.launchers), resumed.output
    assert f"resuming from checkpoint step={stop_step}" in resumed.output
    steps = [line["step"] for line in metric_lines(resumed.output)]
    assert stop_step < steps[0] <= stop_step + TRAINING["log_every"], resumed.output
    assert steps[-1] == stop_step + 10
    digests = checksums(resumed.output)
    assert len(digests) == 2 and len(set(digests.values())) == 1, resumed.output


@pytest.mark.parametrize("script", sorted({case.script for case in ENTRY_POINT_CASES.values()}))
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
