"""torchrun run in the launcher's own process: the workers are the launcher's children (no
second Python between them), a SIGTERM stops them and reads as 143, a failed worker gives
torchrun's report and exit code 1 — real torchrun, real workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[3]
LAUNCHER = textwrap.dedent(
    """
    import os, sys
    from smdist.runtime.torchrun_here import run_torchrun_here
    print(f"launcher pid={os.getpid()}", flush=True)
    env = {**os.environ, "FROM_LAUNCHER": "yes"}
    sys.exit(run_torchrun_here(["--nnodes", "1", "--nproc_per_node", "1", *sys.argv[1:]], env))
    """
)
WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    record = {"parent": os.getppid(), "pid": os.getpid(), "rank": os.environ.get("RANK"),
              "env": os.environ.get("FROM_LAUNCHER"), "argv": sys.argv[1:]}
    print("worker " + json.dumps(record), flush=True)
    if "--fail" in sys.argv:
        sys.exit(3)
    if "--hang" in sys.argv:
        time.sleep(120)
    """
)


def start(tmp_path: Path, *arguments: str) -> subprocess.Popen[str]:
    (tmp_path / "worker.py").write_text(WORKER)
    environ = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(tmp_path / "worker.py"), *arguments],
        cwd=tmp_path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def worker_record(output: str) -> dict:
    lines = [line for line in output.splitlines() if line.startswith("worker ")]
    assert len(lines) == 1, output
    return json.loads(lines[0].removeprefix("worker "))


def test_the_worker_is_the_launchers_child_with_its_environment_and_arguments(tmp_path):
    process = start(tmp_path, "--lr", "0.1")
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    launcher_pid = int(output.split("launcher pid=")[1].split()[0])
    record = worker_record(output)
    assert record["parent"] == launcher_pid  # torchrun ran in the launcher itself
    assert (record["rank"], record["env"], record["argv"]) == ("0", "yes", ["--lr", "0.1"])


def test_a_failed_worker_gives_torchruns_report_and_exit_code_1(tmp_path):
    process = start(tmp_path, "--fail")
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 1, output
    assert "ChildFailedError" in output and "exitcode  : 3" in output


def test_sigterm_stops_the_worker_and_reads_as_stopped(tmp_path):
    process = start(tmp_path, "--hang")
    assert process.stdout is not None
    lines = []
    for line in process.stdout:  # until the worker runs
        lines.append(line)
        if line.startswith("worker "):
            break
    worker = worker_record("".join(lines))["pid"]
    process.send_signal(signal.SIGTERM)
    output = "".join(lines) + process.communicate(timeout=60)[0]
    assert process.returncode == 143, output
    assert "SignalException" in output  # printed as a torchrun process prints it
    deadline = time.monotonic() + 10
    while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{worker}").exists(), "the worker outlived the stop"
