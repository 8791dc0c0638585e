"""``smdist status / logs / stop`` for jobs the local backend ran: real ``smdist run`` jobs on
two emulated hosts (a small script, no framework import), then the commands by name or path."""

from __future__ import annotations

import json
import os
import re
import signal
import textwrap
import time
from pathlib import Path

import pytest
from local_jobs import (
    assert_nothing_left,
    finish,
    smdist_cli,
    smdist_run,
)

from smdist.backends.job_records import FIELD_CHECKS

pytestmark = pytest.mark.integration

SCRIPT = """
    import os, sys, time
    print(f"hello from {os.environ['SM_CURRENT_HOST']} args={sys.argv[1:]}", flush=True)
    tick = float(os.environ.get("TICK", "0"))  # a line every TICK seconds, until killed
    while tick:
        time.sleep(tick)
        print("tick", flush=True)
    time.sleep(float(os.environ.get("NAP", "0")))
    sys.exit(int(os.environ.get("EXIT_CODE", "0")))
"""


def write_job(tmp_path: Path, environment: dict[str, str] | None = None) -> Path:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(textwrap.dedent(SCRIPT))
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            name: hello
            strategy: {{kind: mwms}}
            cluster: {{instance_type: ml.c5.xlarge, instance_count: 2}}
            code: {{source_dir: src, entry_point: train.py}}
            environment: {json.dumps(environment or {})}
            hyperparameters: {{greeting: hi}}
            """
        )
    )
    return job


def test_status_and_logs_of_a_completed_local_job(tmp_path):
    run = smdist_run(write_job(tmp_path), tmp_path)
    assert run.returncode == 0, run.output
    name = run.job_dir().name
    # The default root (.smdist in the working directory) is where smdist run keeps jobs.
    status = smdist_cli(tmp_path, "status", name)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"{name}\tCompleted\tlocal: 2 host(s)")
    assert "model: file://" in status.stdout
    by_path = smdist_cli(tmp_path, "status", "--json", str(run.job_dir()))
    assert by_path.returncode == 0, by_path.stderr
    assert json.loads(by_path.stdout)["status"] == "Completed"
    logs = smdist_cli(tmp_path, "logs", name, "--backend", "local")
    assert logs.returncode == 0, logs.stderr
    lines = logs.stdout.splitlines()
    for host in ("algo-1", "algo-2"):
        said = [line for line in lines if f"hello from {host}" in line]
        assert said and said[0].startswith(host), lines
        assert "args=['--greeting', 'hi'," in said[0]


def test_a_failed_local_job_reports_exit_1_with_its_reason(tmp_path):
    run = smdist_run(write_job(tmp_path, {"EXIT_CODE": "3"}), tmp_path)
    assert run.returncode == 1, run.output
    status = smdist_cli(tmp_path, "status", run.job_dir().name)
    assert status.returncode == 1
    assert "\tFailed\t" in status.stdout
    assert "reason:" in status.stdout


def test_stop_ends_a_running_local_job_as_stopped(tmp_path):
    process, log = smdist_run(
        write_job(tmp_path, {"NAP": "300"}), tmp_path, "--grace", "5", start_only=True
    )
    root = tmp_path / ".smdist"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # running once both hosts have spoken
        logs = list(root.glob("jobs/*/logs/job.log"))
        if logs and logs[0].read_text().count("hello from") == 2:
            break
        time.sleep(0.1)
    name = logs[0].parent.parent.name
    running = smdist_cli(tmp_path, "status", name)
    assert running.returncode == 0 and "\tInProgress\t" in running.stdout, running
    stop = smdist_cli(tmp_path, "stop", name, "--wait")
    assert stop.returncode == 0, stop.stderr
    assert f"{name}: stop requested" in stop.stderr
    run = finish(process, log, root, timeout=60)
    assert run.returncode == 1, run.output
    status = smdist_cli(tmp_path, "status", name)
    assert status.returncode == 1
    assert "\tStopped\t" in status.stdout and "stop requested" in status.stdout
    again = smdist_cli(tmp_path, "stop", name)
    assert again.returncode == 0 and "already Stopped" in again.stderr
    assert_nothing_left(tmp_path)


def test_logs_follow_waits_for_the_end_and_exits_with_the_jobs_status(tmp_path):
    process, log = smdist_run(write_job(tmp_path, {"NAP": "2"}), tmp_path, start_only=True)
    root = tmp_path / ".smdist"
    deadline = time.monotonic() + 60
    while not list(root.glob("jobs/*/job.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    name = next(root.glob("jobs/*/job.json")).parent.name
    followed = smdist_cli(tmp_path, "logs", name, "--follow")
    assert followed.returncode == 0, followed.stderr
    assert "Completed in" in followed.stdout.splitlines()[-1]
    assert finish(process, log, root, timeout=60).returncode == 0


def test_a_job_whose_supervisor_vanished_is_failed(tmp_path):
    run = smdist_run(write_job(tmp_path), tmp_path)
    record_path = run.job_dir() / "job.json"
    record = json.loads(record_path.read_text())
    # As if smdist had been killed mid-job: the record still says InProgress.
    record["status"] = "InProgress"
    record_path.write_text(json.dumps(record))
    status = smdist_cli(tmp_path, "status", run.job_dir().name)
    assert status.returncode == 1
    assert "\tFailed\t" in status.stdout
    assert f"pid {record['supervisor'][0]}" in status.stdout


def _running_for(tmp_path: Path, seconds: float) -> tuple[Path, dict]:
    """The job directory and record of the one job under tmp_path once its log has been
    written to at least ``seconds`` after it started."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        logs = list((tmp_path / ".smdist").glob("jobs/*/logs/job.log"))
        record_path = logs[0].parent.parent / "job.json" if logs else None
        if record_path is not None and record_path.exists() and "tick" in logs[0].read_text():
            record = json.loads(record_path.read_text())
            if logs[0].stat().st_mtime >= record["started"] + seconds:
                return record_path.parent, record
        time.sleep(0.1)
    raise AssertionError(f"no job ran for {seconds} s under {tmp_path}")


def test_a_job_whose_supervisor_was_killed_is_recorded_failed_when_found(tmp_path):
    """kill -9 of smdist run: the first reader writes the end the supervisor could not."""
    process, _ = smdist_run(write_job(tmp_path, {"TICK": "0.2"}), tmp_path, start_only=True)
    job_dir, record = _running_for(tmp_path, 2.0)
    assert record["status"] == "InProgress" and record["supervisor"][0] == process.pid
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert_nothing_left(tmp_path, wait=60)  # the hosts stop once their supervisor is gone
    written = (job_dir / "logs" / "job.log").stat().st_mtime
    listed = smdist_cli(tmp_path, "jobs", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["status"] == "Failed" and row["duration"] >= 2.0, row
    on_disk = json.loads((job_dir / "job.json").read_text())
    assert on_disk["status"] == "Failed", on_disk
    reason = on_disk["failure_reason"]
    assert f"pid {process.pid}" in reason and "ended without recording an end" in reason
    assert re.search(r"\(found at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)$", reason), reason
    # The end: the last time the job's files were written (its log), not when it was found.
    assert on_disk["ended"] == pytest.approx(written, abs=0.01)
    assert row["duration"] == round(on_disk["ended"] - on_disk["started"], 3)
    assert all(check(on_disk[f]) for f, (check, _) in FIELD_CHECKS.items() if f in on_disk)
    text = (job_dir / "job.json").read_text()
    status = smdist_cli(tmp_path, "status", job_dir.name)
    assert status.returncode == 1 and "\tFailed\t" in status.stdout
    assert f"reason: {reason}" in status.stdout
    assert (job_dir / "job.json").read_text() == text  # found once, written once


def test_a_job_found_nowhere_exits_2_naming_where_it_looked(tmp_path):
    missing = smdist_cli(tmp_path, "status", "nope", "--backend", "local")
    assert missing.returncode == 2
    assert str(Path(".smdist") / "jobs" / "nope" / "job.json") in missing.stderr
    by_path = smdist_cli(tmp_path, "logs", "./gone", "--root", "elsewhere")
    assert by_path.returncode == 2
    assert "gone/job.json" in by_path.stderr and "elsewhere" in by_path.stderr
    bad = smdist_cli(tmp_path, "stop", "nope", "--backend", "cloud")
    assert bad.returncode == 2 and "--backend" in bad.stderr
