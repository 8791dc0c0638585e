"""An emulated host's first process (``host_init.py``), run as the local backend runs it: a host
stopped while its command is still starting has each training process signalled as it
appears (SIGTERM, exit 143) instead of being killed at the end of the grace period (137)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import smdist.backends.local.processes as processes
from smdist.backends.local.processes.proctree import command_line, descendants

HOST_INIT = Path(processes.__file__).with_name("host_init.py")
TRAINING = textwrap.dedent(
    """
    import signal, sys, time
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    time.sleep(60)
    """
)


def test_a_process_that_starts_after_the_stop_gets_sigterm_not_sigkill(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    # The shell (passed through) is still in its first command when the stop comes; the
    # training process it starts next did not exist when SIGTERM went out.
    command = f"sleep 1; exec {sys.executable} {script}"
    host = subprocess.Popen(
        [sys.executable, "-S", "-E", str(HOST_INIT), "--grace", "20", "--", "sh", "-c", command]
    )
    try:
        deadline = time.monotonic() + 30
        while not any("sleep" in command_line(pid) for pid in descendants(host.pid)):
            assert time.monotonic() < deadline and host.poll() is None, "the shell never ran"
            time.sleep(0.02)  # until host_init has started the shell, and the shell its sleep
        host.send_signal(signal.SIGTERM)
        code = host.wait(timeout=60)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    assert code == 128 + signal.SIGTERM  # 128 + SIGKILL once the grace period ran out
