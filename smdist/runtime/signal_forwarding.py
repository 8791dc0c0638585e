"""Run a program as the launcher's child (the script of a host outside the distribution's
instance groups): SIGTERM / SIGINT forwarded to it, its exit code (or 128 + the signal that
stopped it) returned."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from types import FrameType

logger = logging.getLogger("smdist.runtime.launcher")


def _terminate_with_parent() -> None:
    """In the child: get SIGTERM if the launcher dies, so the child cannot be orphaned."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def run_forwarding_signals(command: Sequence[str], env: Mapping[str, str]) -> int:
    """Run ``command``, passing SIGTERM / SIGINT on to it; return its exit code.

    A child killed by signal N reports 128 + N, as a shell would. When the child was stopped
    by a forwarded signal and exits non-zero, the result is 128 + that signal (143 for
    SIGTERM), not the child's generic 1: callers tell a stopped job from a failed one by it.
    """
    child: subprocess.Popen[bytes] | None = None
    early: list[int] = []
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if child is None:
            early.append(signum)
        elif child.poll() is None:
            logger.info("forwarding %s to pid %d", signal.Signals(signum).name, child.pid)
            child.send_signal(signum)

    forwarded = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, forward) for sig in forwarded}
    try:
        # setsid: a terminal's Ctrl-C reaches torchrun once, forwarded by this process.
        child = subprocess.Popen(
            list(command),
            env=dict(env),
            start_new_session=True,
            preexec_fn=_terminate_with_parent if sys.platform.startswith("linux") else None,
        )
        for signum in early:
            child.send_signal(signum)
        returncode = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if returncode != 0 and received:
        return 128 + received[0]
    return returncode if returncode >= 0 else 128 - returncode
