"""``smdist run`` on a terminal keeps a status line under the log (elapsed, step, loss,
samples/s from the job's metric lines); in a pipe, with --quiet or under CI, the plain lines.

Every run is a real ``smdist run`` of a tiny one-host job, on a pseudo-terminal where a terminal
is meant (Python's ``pty``: what a user's terminal gives the command). Its program
(``user_scripts/plain_metric_lines``, plain Python under a plain launcher) prints the ready
entry points' metric lines with their own ``log_metrics``: the status line is about the
console, which no framework changes. The pipe case (no status line, no control sequences in the
bytes written) is asserted by every end-to-end job of ``test_local_backend.py``.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from local_jobs import LEFTOVER_MARKER, PYTHON, assert_nothing_left, clean_environ

pytestmark = [pytest.mark.integration]

SCRIPT = Path(__file__).resolve().parent / "user_scripts" / "plain_metric_lines"
# One host: the status line is about the console, not about hosts; the program runs once on it
# (mwms: no launcher of ranks) and prints a metric line every 2 of 6 steps.
ARGS = ["-H", "steps=6", "-H", "log_every=2"]
STATUS = re.compile(r"running \d\d:\d\d \| step \d+ \| loss [\d.]+ \| [\d,]+ samples/s")
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def write_job(directory: Path) -> Path:
    job = {
        "name": "metric-lines",
        "strategy": {"kind": "mwms"},
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 1},
        "code": {"source_dir": str(SCRIPT), "entry_point": "train.py"},
    }
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def on_a_terminal(tmp_path: Path, *args: str, ci: bool = False, timeout: float = 180) -> tuple:
    """``smdist run job.yaml ARGS`` with a pseudo-terminal as its stdout and stderr: (exit
    code, all it wrote, escapes included)."""
    job = write_job(tmp_path)
    environ = clean_environ({LEFTOVER_MARKER: str(tmp_path), "TERM": "xterm-256color"})
    environ.pop("CI", None)
    if ci:
        environ["CI"] = "true"
    command = [PYTHON, "-m", "smdist.cli.app", "run", str(job), "--root", str(tmp_path / ".smdist")]
    main, terminal = pty.openpty()
    process = subprocess.Popen(
        [*command, *ARGS, *args], cwd=tmp_path, env=environ, stdin=terminal, stdout=terminal,
        stderr=terminal, start_new_session=True,
    )  # fmt: skip
    os.close(terminal)
    written, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal closed: every process holding it ended
                break
            if not chunk:
                break
            written += chunk
        else:
            os.killpg(process.pid, signal.SIGKILL)
            raise AssertionError(f"smdist run outlived {timeout} s:\n{written.decode()}")
        return process.wait(timeout=30), written.decode(errors="replace")
    finally:
        os.close(main)


def test_on_a_terminal_a_status_line_shows_step_loss_and_samples_per_second(tmp_path):
    code, written = on_a_terminal(tmp_path)
    assert code == 0, written
    assert STATUS.search(ESCAPE.sub("", written)), written[-3000:]
    plain = ESCAPE.sub("", written).replace("\r", "\n")
    assert "[metrics] step=6 " in plain  # the log lines stay, above it
    assert "Completed; model: file://" in plain
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("how", ["--quiet", "CI"])
def test_quiet_or_ci_on_a_terminal_shows_the_plain_lines_only(tmp_path, how):
    code, written = on_a_terminal(tmp_path, *(["--quiet"] if how == "--quiet" else []),
                                  ci=how == "CI")  # fmt: skip
    assert code == 0, written
    assert "[metrics] step=6 " in written
    assert "samples/s" not in written and "running 00:" not in written
    assert_nothing_left(tmp_path)
