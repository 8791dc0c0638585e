"""A rank that hangs is named, not the rank that noticed; two ranks of one host keep their own
errors.

Real jobs of a user's own script, 2 hosts x 2 processes (torchrun launcher, gloo): algo-2 runs
ranks 2 and 3. When rank 3 is stopped (SIGSTOP) while the others' collectives time out, the
job's failure reason names algo-2 rank 3 and its pid, not the rank whose timeout ended the job;
a stopped rank is continued after its SIGTERM, so the stop does not wait out the grace period.
When both ranks of algo-2 raise, ``output/failure`` credits each error to its own rank. Every
run is bounded by a timeout; afterwards nothing of the job is left.

Rank 3 sitting silent instead (alive, running, never back in a collective) is named as probably
hung, not rank 2 whose wait timed out: that 2 x 2 job is run, and all of what this module
asserted of it is asserted, through ``smdist run`` by test_local_faults'
test_a_hung_rank_fails_the_job_through_the_collective_timeout.
"""

from __future__ import annotations

import json
import re
import signal
import textwrap
from pathlib import Path

import pytest
from local_jobs import assert_nothing_left

import smdist
from smdist.backends.base import JobStatus

pytestmark = [pytest.mark.integration, pytest.mark.torch]

HUNG_RANK = """
    import datetime
    import os
    import signal
    import time

    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=int(os.environ["SMDIST_COLLECTIVE_TIMEOUT"]))
    dist.init_process_group("gloo", timeout=timeout)
    rank = dist.get_rank()
    print(f"rank {rank} pid {os.getpid()}", flush=True)

    def stopping(*_):
        print(f"rank {rank} got SIGTERM, saving a checkpoint", flush=True)
        os._exit(143)

    signal.signal(signal.SIGTERM, stopping)
    for step in range(100000):
        dist.all_reduce(torch.ones(1))
        if rank == 3 and step == 5:
            os.kill(os.getpid(), signal.SIGSTOP)
            time.sleep(100000)  # once continued: alive, silent, never back in a collective
        time.sleep(0.01)
"""

TWO_ERRORS = """
    import time

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for step in range(3):
        dist.all_reduce(torch.ones(1))
        print(f"rank {rank} step {step}", flush=True)
    if rank == 2:
        raise ValueError("rank 2: shard 7 is corrupt")
    if rank == 3:
        raise KeyError("rank 3: no column 'label'")
    time.sleep(60)
"""

# A grace longer than the wait: a stop that waited it out would not end in time.
LONG_GRACE = 300
WAIT = 150


def spec(tmp_path: Path, script: str, **hyperparameters: str) -> smdist.JobSpec:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(textwrap.dedent(script))
    return smdist.JobSpec(
        name="hung",
        strategy=smdist.PyTorchDDP(processes_per_host=2, collective_timeout=5),
        cluster=smdist.Cluster(instance_type="ml.c5.xlarge", instance_count=2),
        code=smdist.Code(source_dir=str(source), entry_point="train.py"),
        hyperparameters=hyperparameters,
    )


def run(tmp_path: Path, job_spec: smdist.JobSpec, grace: float) -> smdist.Job:
    job = smdist.fit(
        job_spec,
        backend="local",
        wait=False,
        logs=False,
        options={"root": tmp_path / ".smdist", "grace": grace},
    )
    status = job.wait(timeout=WAIT)
    if status not in (JobStatus.FAILED, JobStatus.COMPLETED, JobStatus.STOPPED):
        job.kill()
        job.wait(timeout=60)
        pytest.fail(f"the job did not end within {WAIT} s (its grace is {grace} s)")
    return job


def printed_pid(job: smdist.Job, rank: int) -> int:
    """The pid rank ``rank`` printed (as its host sees it)."""
    log = (job.job_dir / "logs" / "job.log").read_text()
    found = re.search(rf"rank {rank} pid (\d+)", log)
    assert found, log
    return int(found.group(1))


def failure_file(job: smdist.Job, host: str) -> str:
    return (job.job_dir / "hosts" / host / "output" / "failure").read_text()


def test_a_stopped_rank_is_named_and_the_stop_does_not_wait_out_the_grace(tmp_path):
    job = run(tmp_path, spec(tmp_path, HUNG_RANK), LONG_GRACE)
    assert job.status is JobStatus.FAILED, job.failure_reason
    reason = job.failure_reason
    pid = printed_pid(job, 3)
    assert f"algo-2 rank 3 (pid {pid}) is stopped (SIGSTOP)" in reason, reason
    assert "; first to give up: algo-" in reason  # and what the rank that noticed said
    record = json.loads((job.job_dir / "job.json").read_text())
    assert record["failure_reason"] == reason
    # SIGTERM, then SIGCONT: the stopped rank acted on its SIGTERM, nothing was killed.
    log = (job.job_dir / "logs" / "job.log").read_text()
    assert "rank 3 got SIGTERM, saving a checkpoint" in log, log
    assert record["exit_codes"]["algo-2"] != 128 + signal.SIGKILL, record
    assert failure_file(job, "algo-2").startswith(reason + "\n")
    assert_nothing_left(tmp_path)


def test_two_ranks_of_one_host_each_have_their_own_error_in_output_failure(tmp_path):
    job = run(tmp_path, spec(tmp_path, TWO_ERRORS), 5)
    assert job.status is JobStatus.FAILED, job.failure_reason
    reason = job.failure_reason
    errors = {
        2: "ValueError: rank 2: shard 7 is corrupt",
        3: "KeyError: \"rank 3: no column 'label'\"",
    }
    # Both raise at once: either may be the one torchrun saw fail first.
    first, other = (2, 3) if "on algo-2 rank 2 (" in reason else (3, 2)
    # Exit code 1, or SIGABRT where torch 2.13's gloo aborted the rank in its teardown after the
    # exception (now and then, on a loaded machine; test_local_mode's _torch_exit_abort): how
    # the rank ended is torch's, which error is credited to which rank is what this proves.
    ending = re.search(rf"on algo-2 rank {first} \((exit code 1|killed by SIGABRT)\): ", reason)
    assert ending and reason[ending.end() :].startswith(errors[first]), reason
    written = failure_file(job, "algo-2")
    own = written.split(f"Last lines of algo-2 rank {first}:\n", 1)[1].split("\n\n", 1)[0]
    assert errors[first] in own, written
    assert errors[other] not in own and f"rank {other}" not in own, written  # nothing of its
    assert f"algo-2 rank {other}: {errors[other]}" in written, written
    assert_nothing_left(tmp_path)
