"""Faults in local jobs: nothing hangs, nothing is lost.

A crashing rank, a hung rank, a silent job, max_run, a SIGTERM or Ctrl-C to smdist each end
the job with the right status, and then no process of the job is left in the process table
(smdist itself killed with SIGKILL mid-training: test_host_artifacts' kill -9 test, which
resumes the killed job too). A stopped job leaves a checkpoint that the next run resumes from.
Each run is bounded by a subprocess timeout; no test measures time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import textwrap
import time
from pathlib import Path

import pytest
from local_jobs import assert_nothing_left, finish, smdist_run

pytestmark = pytest.mark.integration
torch_only = pytest.mark.torch

STUBBORN_PEER = """
    import os, signal, time
    rank = int(os.environ["RANK"])
    print(f"rank {rank} started", flush=True)
    if rank == 1:
        raise RuntimeError("boom from rank 1")
    # Rank 0 keeps working and shrugs SIGTERM off: only the SIGKILL after the grace period ends it.
    signal.signal(signal.SIGTERM, lambda *_: print("rank 0 got SIGTERM", flush=True))
    while True:
        print("rank 0 working", flush=True)
        time.sleep(0.2)
"""

# 2 hosts x 2 processes: algo-2 runs ranks 2 and 3, and rank 3 hangs.
HANG = """
    import datetime, os, time
    import torch
    import torch.distributed as dist

    # smdist's strategy setting travels in the environment, never in argv.
    timeout = datetime.timedelta(seconds=int(os.environ.get("SMDIST_COLLECTIVE_TIMEOUT", 1800)))
    dist.init_process_group("gloo", timeout=timeout)
    rank = dist.get_rank()
    print(f"rank {rank} pid {os.getpid()}", flush=True)
    for step in range(100000):
        dist.all_reduce(torch.ones(1))
        if rank == 3 and step == 5:
            time.sleep(100000)  # alive, silent, never back in a collective
        time.sleep(0.01)
"""

SILENT = """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
    print("going quiet", flush=True)
    while True:
        time.sleep(1)
"""

DAEMON = """
    import os, time
    if os.fork() == 0:
        os.setsid()  # a new session, then a grandchild: nothing links it to the job any more
        if os.fork() == 0:
            time.sleep(100000)
        os._exit(0)
    print("left a daemon behind", flush=True)
"""

MPI_CRASH = """
    import os, socket, time
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    print(f"rank {rank} on {socket.gethostname()} in {os.getcwd()}", flush=True)
    for step in range(1000):
        time.sleep(0.1)
        if rank == 1 and step == 5:
            raise ValueError("rank 1 fell over")
"""

# A job long enough to be stopped, keeping checkpoints as a training script does: the main
# process (RANK 0 under torchrun, the first host under MultiWorkerMirroredStrategy) resumes
# from the newest checkpoint in /opt/ml/checkpoints (what checkpoint_s3_uri syncs), writes one
# every --checkpoint_every steps and one on SIGTERM, then exits 143. Plain Python sleeping
# between steps: it trains at once and costs no CPU while it waits to be stopped.
RESUMABLE = """
    import argparse, json, os, signal, sys, time
    from pathlib import Path

    parser = argparse.ArgumentParser()
    parser.add_argument("--log_every", type=int, required=True)
    parser.add_argument("--checkpoint_every", type=int, required=True)
    args, _ = parser.parse_known_args()  # MultiWorkerMirroredStrategy adds --model_dir
    if "RANK" in os.environ:
        main = os.environ["RANK"] == "0"
    else:
        main = os.environ["SM_CURRENT_HOST"] == json.loads(os.environ["SM_HOSTS"])[0]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    folder = Path(os.environ["SM_MODEL_DIR"]).parent / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    kept = sorted(folder.glob("checkpoint-*.json"))
    step = json.loads(kept[-1].read_text())["step"] if kept else 0
    if main and kept:
        print(f"resuming from checkpoint step={step}", flush=True)

    def checkpoint():
        written = folder / f".tmp-{step}"  # renamed into place: never synced half-written
        written.write_text(json.dumps({"step": step}))
        written.rename(folder / f"checkpoint-{step:09d}.json")

    while not stop:
        time.sleep(0.05)
        step += 1
        if main and step % args.log_every == 0:
            print(f"[metrics] step={step}", flush=True)
        if main and step % args.checkpoint_every == 0:
            checkpoint()
    if main:
        print(f"[metrics] step={step}", flush=True)
        checkpoint()
        print(f"stopped by SIGTERM at step={step}", flush=True)
    sys.exit(143)
"""


def custom_job(
    tmp_path: Path,
    script: str,
    strategy: str,
    cluster: str = "",
    more: str = "",
    name: str = "fault",
) -> Path:
    """``script`` as a job's entry point under ``strategy`` (``more``: further job lines)."""
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(textwrap.dedent(script))
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            name: {name}
            strategy: {strategy}
            cluster: {cluster or "{instance_type: ml.c5.xlarge, instance_count: 2}"}
            code: {{source_dir: src, entry_point: train.py}}
            """
        )
        + more
    )
    return job


LOG_EVERY = 20


def resumable_job(tmp_path: Path, strategy: str, cluster: str = "") -> Path:
    """RESUMABLE as a job with a checkpoint store, under ``strategy``."""
    more = (
        f"hyperparameters: {{log_every: {LOG_EVERY}, checkpoint_every: 50}}\n"
        'checkpoint: {s3_uri: "s3://my-bucket/checkpoints/resumable"}\n'
    )
    return custom_job(tmp_path, RESUMABLE, strategy, cluster, more=more, name="resumable")


def last_step(output: str) -> int:
    steps = [int(s) for s in re.findall(r"\[metrics\] step=(\d+)", output)]
    assert steps, output
    return steps[-1]


@torch_only
def test_a_crash_is_reported_when_it_happens_then_the_other_hosts_are_stopped(tmp_path):
    """A crashing rank fails the job with its error (smdist's output, job.json, the failing
    host's ``output/failure``), said as soon as it happens, before the other hosts are stopped.
    A rank that raises while its peer waits in a gloo collective (torch DDP, 2 hosts x 1) is
    test_failure_reasons' test_a_rank_that_raises_is_named_with_its_exception, a job of that
    kind that runs anyway: this module's torch crash test, the same job, is gone."""
    job = custom_job(tmp_path, STUBBORN_PEER, "{kind: pytorch_ddp, processes_per_host: 1}")
    # 1 s: rank 0 ignores SIGTERM, so the grace period is waited out.
    run = smdist_run(job, tmp_path, "--grace", "1")
    assert run.returncode == 1, run.output
    assert "Failed" in run.output
    assert "ExecuteUserScriptError on algo-2 rank 1" in run.output
    assert "RuntimeError: boom from rank 1" in run.output
    failure = (run.job_dir() / "hosts" / "algo-2" / "output" / "failure").read_text()
    assert "boom from rank 1" in failure
    lines = (run.job_dir() / "logs" / "job.log").read_text().splitlines()

    def first(text: str) -> int:
        found = [index for index, line in enumerate(lines) if text in line]
        assert found, f"no line with {text!r} in:\n" + "\n".join(lines)
        return found[0]

    reported = first(
        "smdist     | [failure] algo-2 rank 1 (exit code 1): RuntimeError: boom from rank 1; "
        "stopping algo-1: SIGTERM now, SIGKILL after 1 s"
    )
    # Said before the peer is stopped, and the peer is stopped long before the job ends.
    assert reported < first("rank 0 got SIGTERM") < first("smdist     | Failed in")
    record = json.loads((run.job_dir() / "job.json").read_text())
    assert record["exit_codes"] == {"algo-2": 1, "algo-1": 128 + signal.SIGKILL}
    assert "ExecuteUserScriptError on algo-2 rank 1" in record["failure_reason"]
    assert_nothing_left(tmp_path)


def test_a_daemon_the_script_leaves_behind_ends_with_its_host(tmp_path):
    # MultiWorkerMirroredStrategy starts the script as a plain process per host: no framework
    # is needed for a script that does not import one.
    job = custom_job(tmp_path, DAEMON, "{kind: mwms}")
    run = smdist_run(job, tmp_path, "--grace", "5")
    assert run.returncode == 0, run.output
    assert run.output.count("left a daemon behind") == 2
    assert_nothing_left(tmp_path)


def test_a_crashing_mpi_rank_is_named_with_its_host(tmp_path):
    job = custom_job(
        tmp_path,
        MPI_CRASH,
        "{kind: sdmp, version: 1, partitions: 1, processes_per_host: 1}",
        "{instance_type: ml.p3.16xlarge, instance_count: 2}",
    )
    run = smdist_run(job, tmp_path, "--grace", "5")
    assert run.returncode == 1, run.output
    assert "on algo-2 rank 1" in run.output and "ValueError: rank 1 fell over" in run.output
    # mpirun ran the rank on algo-2, in its /opt/ml/code, as on another machine.
    assert "rank 1 on algo-2 in /opt/ml/code" in run.output
    assert_nothing_left(tmp_path)


@torch_only
def test_a_hung_rank_fails_the_job_through_the_collective_timeout(tmp_path):
    """Rank 3 sits silent (alive, never back in a collective) while the other ranks'
    collectives time out: the job fails naming algo-2 rank 3 and its pid, not a rank whose wait
    timed out, not even rank 2 of its own host, on smdist's last line, in job.json and at the
    head of algo-2's ``output/failure`` (test_hung_ranks' silent rank, on the same job)."""
    strategy = "{kind: pytorch_ddp, processes_per_host: 2, collective_timeout: 5}"
    run = smdist_run(custom_job(tmp_path, HANG, strategy), tmp_path, "--grace", "5")
    assert run.returncode == 1, run.output
    assert "Failed" in run.output
    assert "Timed out" in run.output
    log = (run.job_dir() / "logs" / "job.log").read_text()
    found = re.search(r"rank 3 pid (\d+)", log)  # the pid as its host sees it
    assert found, log
    # The rank that never came back to the collective is named, not one whose wait timed out.
    named = f": Failed: AlgorithmError: ExecuteUserScriptError: algo-2 rank 3 (pid {found[1]})"
    assert named + " is probably hung: it was running and printed no error" in run.output
    reason = json.loads((run.job_dir() / "job.json").read_text())["failure_reason"]
    assert f"algo-2 rank 3 (pid {found[1]}) is probably hung" in reason, reason
    assert "algo-2 rank 2" not in reason.split("; first to give up: ")[0]  # it timed out
    failure = (run.job_dir() / "hosts" / "algo-2" / "output" / "failure").read_text()
    assert failure.startswith(reason + "\n"), failure
    assert_nothing_left(tmp_path)


def test_a_silent_job_is_caught_by_the_stall_watchdog_and_killed(tmp_path):
    # A plain process per host (MultiWorkerMirroredStrategy's launch, no framework imported):
    # it prints at once, so a loaded machine's slow torchrun start cannot look like a stall.
    job = custom_job(tmp_path, SILENT, "{kind: mwms}")
    # Both waited out: the stall, then the grace period (the process ignores SIGTERM).
    run = smdist_run(job, tmp_path, "--stall-timeout", "5", "--grace", "1")
    assert run.returncode == 1, run.output
    assert "the job stalled: no output from any process for 5 s" in run.output
    assert "going quiet" in run.output  # the last line a process printed is in the reason
    assert_nothing_left(tmp_path)


def wait_for_metrics(process, log: Path) -> None:
    """Until the job's first metric line: its ranks train."""
    deadline = time.monotonic() + 240
    while "[metrics]" not in log.read_text(errors="replace"):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


def test_max_run_stops_the_job_and_the_next_run_resumes_from_its_checkpoint(tmp_path):
    """max_run stops the first run, whose main process checkpoints on SIGTERM; the next run of
    the job resumes from that checkpoint and trains on until SIGTERM to smdist stops it
    cleanly, checkpointing again (SIGINT, Ctrl-C, is the next test's: it reaches smdist with
    its whole process group). The run after a stop is the one a SIGTERM stops: one job fewer.
    A plain process per host (MultiWorkerMirroredStrategy's launch, no framework imported): it
    trains within a second even on a loaded machine, well inside max_run. A ready entry
    point's own checkpoint on SIGTERM and resume is test_torch_entry_points'."""
    job = resumable_job(tmp_path, "{kind: mwms}")
    store = tmp_path / ".smdist" / "checkpoints" / "resumable"
    stopped = smdist_run(job, tmp_path, "--max-run", "15", "--grace", "20")
    assert stopped.returncode == 1, stopped.output
    assert "Stopped" in stopped.output and "MaxRuntimeExceeded" in stopped.output
    assert "stopped by SIGTERM" in stopped.output  # the script checkpointed on SIGTERM
    step = last_step(stopped.output)
    kept = sorted(store.iterdir())
    assert kept and kept[-1].name == f"checkpoint-{step:09d}.json"
    assert_nothing_left(tmp_path)

    process, log = smdist_run(job, tmp_path, "--grace", "20", start_only=True)
    wait_for_metrics(process, log)
    os.kill(process.pid, signal.SIGTERM)
    run = finish(process, log, tmp_path / ".smdist", timeout=120)
    assert run.returncode == 1, run.output
    assert f"resuming from checkpoint step={step}" in run.output
    steps = [int(s) for s in re.findall(r"\[metrics\] step=(\d+)", run.output)]
    assert step < steps[0] <= step + LOG_EVERY, run.output  # on from the step it resumed at
    assert "Stopped" in run.output and "stop requested" in run.output
    assert "stopped by SIGTERM" in run.output  # the training processes checkpointed
    kept = sorted(store.iterdir())
    assert kept[-1].name == f"checkpoint-{last_step(run.output):09d}.json", kept
    assert_nothing_left(tmp_path)


@torch_only
def test_ctrl_c_in_a_terminal_prints_a_short_stop_and_no_tracebacks(tmp_path):
    # A terminal's Ctrl-C: SIGINT to smdist's whole process group (smdist among them, so this
    # is also SIGINT to smdist alone). The stopped torchrun agents print SignalException
    # tracebacks; the console leaves them out, the job's log keeps them. The rank torchrun
    # starts is plain Python: the agent is what Ctrl-C has to stop quietly; one host has one.
    job = resumable_job(
        tmp_path,
        "{kind: pytorch_ddp, processes_per_host: 1}",
        "{instance_type: ml.c5.xlarge, instance_count: 1}",
    )
    process, log = smdist_run(job, tmp_path, "--grace", "20", start_only=True)
    wait_for_metrics(process, log)
    os.killpg(process.pid, signal.SIGINT)
    run = finish(process, log, tmp_path / ".smdist", timeout=120)
    assert run.returncode == 1, run.output
    assert "Traceback" not in run.output and "SignalException" not in run.output, run.output
    assert "Stopped" in run.output and "stop requested by Ctrl-C" in run.output, run.output
    assert "stopped by SIGTERM" in run.output  # the training processes checkpointed
    assert "checkpoint file(s) kept in" in run.output
    assert any((tmp_path / ".smdist" / "checkpoints" / "resumable").iterdir())
    record = json.loads((run.job_dir() / "job.json").read_text())
    assert record["status"] == "Stopped" and record["failure_reason"] == "stop requested by Ctrl-C"
    kept = (run.job_dir() / "logs" / "job.log").read_text()
    assert "SignalException" in kept  # the log file keeps every line the console left out
    assert f"they are in {run.job_dir() / 'logs' / 'job.log'}" in run.output
    assert_nothing_left(tmp_path)
