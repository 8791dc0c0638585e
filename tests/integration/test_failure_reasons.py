"""Failure reasons a person can act on, from real failing jobs on the local backend.

A user's own script (strict argparse, not one of smdist's entry points) fails on one rank: it
raises, aborts, or exits with a code. The job's failure reason names the host, the rank, the
exit code or signal and what the rank last wrote, and says so in the failing host's
``output/failure``, in ``job.failure_reason`` and ``job.json``, and on the last line of
``smdist run``. Every run is bounded by a timeout; afterwards nothing of the job is left.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from local_jobs import assert_nothing_left, smdist_run

import smdist
from smdist.backends.base import JobStatus

pytestmark = pytest.mark.integration

TORCH_SCRIPT = """
    import argparse
    import os

    import torch
    import torch.distributed as dist

    parser = argparse.ArgumentParser()
    parser.add_argument("--fail", choices=["raise", "abort"], required=True)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()  # strict: any argument smdist added would be an error

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for step in range(args.steps):
        dist.all_reduce(torch.ones(1))
        print(f"rank {rank} step {step}", flush=True)
        if rank == 1 and step == 1:
            if args.fail == "raise":
                raise ValueError("bad shard 7")
            print("rank 1: shard 7 is corrupt, aborting", flush=True)
            os.abort()
    dist.destroy_process_group()
"""

PLAIN_SCRIPT = """
    import json
    import os
    import sys

    hosts = json.loads(os.environ["SM_HOSTS"])
    print(f"{os.environ['SM_CURRENT_HOST']} reading its shards", flush=True)
    if os.environ["SM_CURRENT_HOST"] == hosts[-1]:
        print("shard 7: checksum mismatch", file=sys.stderr, flush=True)
        sys.exit(3)
"""

MPI_SCRIPT = """
    import os
    import time

    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    print(f"rank {rank} started", flush=True)
    time.sleep(0.5)
    if rank == 1:
        print("rank 1: shard 7 is corrupt, aborting", flush=True)
        os.abort()
    time.sleep(60)
"""


def source(tmp_path: Path, script: str) -> Path:
    directory = tmp_path / "src"
    directory.mkdir(exist_ok=True)
    (directory / "train.py").write_text(textwrap.dedent(script))
    return directory


def ddp_spec(tmp_path: Path, fail: str) -> smdist.JobSpec:
    return smdist.JobSpec(
        name="failing",
        strategy=smdist.PyTorchDDP(processes_per_host=1),
        cluster=smdist.Cluster(instance_type="ml.c5.xlarge", instance_count=2),
        code=smdist.Code(source_dir=str(source(tmp_path, TORCH_SCRIPT)), entry_point="train.py"),
        hyperparameters={"fail": fail},
    )


def failure_file(job_dir: Path, host: str) -> str:
    return (job_dir / "hosts" / host / "output" / "failure").read_text()


def assert_recorded_everywhere(job_dir: Path, reason: str) -> None:
    """The reason is in job.json and heads the failing host's output/failure."""
    assert json.loads((job_dir / "job.json").read_text())["failure_reason"] == reason
    assert failure_file(job_dir, "algo-2").startswith(reason + "\n")
    assert not (job_dir / "hosts" / "algo-1" / "output" / "failure").exists()


@pytest.mark.torch
def test_a_rank_that_raises_is_named_with_its_exception(tmp_path):
    job = smdist.fit(
        ddp_spec(tmp_path, "raise"),
        backend="local",
        logs=False,
        options={"root": tmp_path / ".smdist", "grace": 5},
    )
    assert job.status is JobStatus.FAILED, job.failure_reason
    reason = job.failure_reason
    assert "ExecuteUserScriptError on algo-2 rank 1 (" in reason
    # torch 2.13's gloo can abort a rank as it exits (see the FACTS of this machine): the
    # exception is still what the rank said.
    assert "(exit code 1)" in reason or "(killed by SIGABRT)" in reason
    assert reason.endswith("ValueError: bad shard 7")
    assert_recorded_everywhere(job.job_dir, reason)
    written = failure_file(job.job_dir, "algo-2")
    assert "Last lines of algo-2 rank 1:" in written
    assert 'raise ValueError("bad shard 7")' in written  # the traceback, whole
    assert_nothing_left(tmp_path)


@pytest.mark.torch
def test_a_rank_that_aborts_is_named_with_its_signal_and_last_lines(tmp_path):
    job = smdist.fit(
        ddp_spec(tmp_path, "abort"),
        backend="local",
        logs=False,
        options={"root": tmp_path / ".smdist", "grace": 5},
    )
    assert job.status is JobStatus.FAILED, job.failure_reason
    reason = job.failure_reason
    assert "ExecuteUserScriptError on algo-2 rank 1 (killed by SIGABRT)" in reason
    assert reason.endswith("rank 1 step 1 | rank 1: shard 7 is corrupt, aborting")
    assert "Connection" not in reason  # rank 0's error came from losing its peer
    assert_recorded_everywhere(job.job_dir, reason)
    assert_nothing_left(tmp_path)


def write_job(tmp_path: Path, script: str, strategy: str, cluster: str) -> Path:
    source(tmp_path, script)
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            name: failing
            strategy: {strategy}
            cluster: {cluster}
            code: {{source_dir: src, entry_point: train.py}}
            """
        )
    )
    return job


def last_line(output: str) -> str:
    return [line for line in output.splitlines() if line.strip()][-1]


def test_smdist_run_ends_with_the_reason_of_a_process_that_exits_3(tmp_path):
    # MultiWorkerMirroredStrategy starts the script as a plain process per host; a script
    # that imports no framework needs none.
    job = write_job(
        tmp_path, PLAIN_SCRIPT, "{kind: mwms}", "{instance_type: ml.c5.xlarge, instance_count: 2}"
    )
    run = smdist_run(job, tmp_path, "--grace", "5")
    assert run.returncode == 1, run.output
    reason = (
        "AlgorithmError: ExecuteUserScriptError on algo-2 (exit code 3): its last output: "
        "algo-2 reading its shards | shard 7: checksum mismatch"
    )
    assert last_line(run.output).endswith(f": Failed: {reason}")
    assert_recorded_everywhere(run.job_dir(), reason)
    assert_nothing_left(tmp_path)


def test_smdist_run_ends_with_the_signal_mpirun_saw(tmp_path):
    job = write_job(
        tmp_path,
        MPI_SCRIPT,
        "{kind: sdmp, version: 1, partitions: 1, processes_per_host: 1}",
        "{instance_type: ml.p3.16xlarge, instance_count: 2}",
    )
    run = smdist_run(job, tmp_path, "--grace", "5")
    assert run.returncode == 1, run.output
    line = last_line(run.output)
    assert ": Failed: AlgorithmError: ExecuteUserScriptError on algo-2 rank 1 " in line
    assert line.endswith(
        "(killed by SIGABRT): its last output: rank 1 started | "
        "rank 1: shard 7 is corrupt, aborting"
    )
    reason = line.split(": Failed: ", 1)[1]
    assert_recorded_everywhere(run.job_dir(), reason)
    assert_nothing_left(tmp_path)
