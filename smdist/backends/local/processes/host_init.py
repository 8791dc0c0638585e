"""The first process of an emulated host: it starts the host's command and owns its tree.

Usage: ``python -S -E host_init.py --grace SECONDS --parent PID -- command ...``

A SageMaker host is a container: when its main process ends, or the job is stopped, nothing
started inside it survives. One process per emulated host gives the same guarantee here:

- it is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so processes that detach (``orted
  --daemonize``, torchrun's workers in their own session, double forks) stay below it, and it
  reaps them, so none lingers as a zombie;
- SIGTERM (from smdist, or from the kernel when smdist dies: ``PR_SET_PDEATHSIG``) stops the
  host as SageMaker does: SIGTERM to the training processes, SIGKILL to everything left after
  the grace period;
- when the command ends by itself, anything it left running is stopped within a few seconds;
- it exits with the command's exit code (128 + N when a signal N ended it).

Standard library only, started without site-packages so it costs a few milliseconds.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

import proctree  # this script runs from its own directory, as a file, without smdist

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
LINGER_SECONDS = 3.0  # how long leftovers of a finished command get after SIGTERM
WATCHED = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _parse(argv: list[str]) -> tuple[float, int, list[str]]:
    grace, parent = 30.0, 0
    index = 0
    while index < len(argv) and argv[index] != "--":
        if argv[index] == "--grace":
            grace = float(argv[index + 1])
        elif argv[index] == "--parent":
            parent = int(argv[index + 1])
        index += 2
    command = argv[index + 1 :]
    if not command:
        raise SystemExit("host_init.py: no command given after --")
    return grace, parent, command


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _unblock() -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


class Host:
    def __init__(self, command: list[str], grace: float) -> None:
        self.grace = grace
        self.child = subprocess.Popen(command, preexec_fn=_unblock)
        self.main_code: int | None = None
        self.kill_at: float | None = None
        self.stopping = False
        self.lingering = False
        self.terminated: set[int] = set()  # the processes sent SIGTERM by stop()

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child.pid:
                self.main_code = _exit_code(status)
                self.child.returncode = self.main_code  # keeps Popen from waiting on it again

    def stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        self._terminate_new()
        self._deadline(self.grace)

    def _terminate_new(self) -> None:
        """SIGTERM to the processes that should get it and have not yet: a host stopped while
        its command is still starting (``unshare`` before its child, a launcher before the
        script) has them signalled as they appear, instead of waiting out the grace period."""
        targets = proctree.termination_targets(os.getpid(), proctree.process_table())
        new = [pid for pid in targets if pid not in self.terminated]
        proctree.send(new, signal.SIGTERM)
        self.terminated.update(new)

    def _deadline(self, seconds: float) -> None:
        at = time.monotonic() + seconds
        self.kill_at = at if self.kill_at is None else min(self.kill_at, at)

    def step(self) -> int | None:
        """One round of bookkeeping; the exit code once nothing is left below us."""
        self.reap()
        left = proctree.descendants(os.getpid())
        if self.main_code is not None and not left:
            return self.main_code
        if self.stopping and self.main_code is None:
            self._terminate_new()
        if self.main_code is not None and not self.lingering:
            # The command is over: whatever it left behind gets a short SIGTERM, then SIGKILL.
            self.lingering = True
            proctree.send(left, signal.SIGTERM)
            self._deadline(LINGER_SECONDS)
        if self.kill_at is not None and time.monotonic() >= self.kill_at:
            proctree.kill_all(left)
            if self.main_code is None:
                self.main_code = 128 + signal.SIGKILL
        return None


def main(argv: list[str]) -> int:
    grace, parent, command = _parse(argv)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    host = Host(command, grace)
    if parent and os.getppid() != parent:
        host.stop()  # smdist was gone before the death signal was armed
    while True:
        code = host.step()
        if code is not None:
            return code
        busy = host.stopping or host.lingering
        info = signal.sigtimedwait(WATCHED, 0.1 if busy else 5.0)
        if info is not None and info.si_signo != signal.SIGCHLD:
            host.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
