"""Start the emulated hosts' processes and see the job through to its end, whatever happens.

Every host's command runs under ``host_init.py`` (its own session, a subreaper that owns the
host's whole process tree). The supervisor then watches:

- a process exiting non-zero fails the job: a line names the host, the rank and how it ended
  at once (not when the job is over), or the rank that is stopped (SIGSTOP) or hung when that
  is why, then every other host is stopped;
- ``max_run`` seconds after the start the job is stopped (SageMaker: MaxRuntimeExceeded);
- no output from any process for ``stall_timeout`` seconds fails the job as hung;
- ``request_stop(by)`` (Ctrl-C, SIGTERM, ``Job.stop()``) stops it, and so does the stop-request
  file appearing in the job's directory (``smdist stop NAME`` from another process); the
  stop's detail says which (``stop requested by Ctrl-C``).

Stopping is SageMaker's: SIGTERM (the host init process delivers it to the training processes
and SIGKILLs what is left after the grace period; a stopped process is continued after its
SIGTERM, so that it acts on it), then, should an init process itself not finish, SIGKILL to
everything below it. Just before, the job's ranks are noted as they stand (``Outcome.ranks``):
which are alive, which are stopped, for the failure reason. Finally every process that still
carries the job's token in its environment is killed, so nothing outlives the job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from smdist.backends.local.hosts.base import HostSet
from smdist.backends.local.processes import proctree
from smdist.backends.local.processes.endings import RankProcess, rank_processes, ranks_below
from smdist.backends.local.processes.host_command import HostCommand
from smdist.backends.local.reports import failure as local_failure
from smdist.backends.local.reports.logs import SMDIST, JobLog, pump

INIT_SCRIPT = Path(__file__).with_name("host_init.py")
KILL_MARGIN = 5.0  # seconds past the grace period before smdist kills an init process itself
POLL_SECONDS = 0.05
DRAIN_SECONDS = 2.0  # how long a failed host's last lines may take to reach the log
SEE_RANKS_EVERY = 1.0  # seconds between looks at which process is which rank, while it runs

FAILURE, STALL, MAX_RUN, REQUESTED = "failure", "stall", "max_run", "requested"


@dataclass
class HostProcess:
    command: HostCommand
    process: subprocess.Popen[bytes]
    reader: threading.Thread
    exit_code: int | None = None
    exited_at: float | None = None


@dataclass
class Outcome:
    """How the processes ended; the job's status is derived from it."""

    exit_codes: dict[str, int] = field(default_factory=dict)
    failed_hosts: list[str] = field(default_factory=list)  # non-zero before any stop, in order
    stop_cause: str | None = None  # FAILURE, STALL, MAX_RUN, REQUESTED or None
    stop_detail: str = ""
    killed: bool = False  # the grace period ran out
    leftovers: int = 0  # processes killed by the final sweep
    ranks: tuple[RankProcess, ...] | None = None  # as they stood when the stop began
    seen_ranks: tuple[RankProcess, ...] = ()  # every rank seen while the job ran
    duration: float = 0.0

    @property
    def succeeded(self) -> bool:
        return bool(self.exit_codes) and all(code == 0 for code in self.exit_codes.values())


class Supervisor:
    def __init__(
        self,
        commands: list[HostCommand],
        log: JobLog,
        *,
        token: str,
        python: str,
        grace: float,
        max_run: float | None,
        stall_timeout: float | None,
        stop_file: Path | None = None,
        single_launcher: bool = False,
        starter: HostSet,
    ) -> None:
        self.commands = commands
        self.starter = starter  # how each host's first process starts
        self.single_launcher = single_launcher  # one mpirun runs every host's ranks
        self.log = log
        self.token = token
        self.python = python
        self.grace = grace
        self.max_run = max_run
        self.stall_timeout = stall_timeout
        self.stop_file = stop_file
        self.hosts: list[HostProcess] = []
        self._stop_requested = threading.Event()
        self._stop_by = ""  # who asked for the stop, in the user's words
        self._kill_requested = threading.Event()
        self._wake = threading.Event()
        self.started_at: float | None = None
        self.spawned = threading.Event()  # every host process started, or the start failed
        self.outcome = Outcome()
        # The ranks seen while the job runs (outcome.seen_ranks): a rank its own launcher closed
        # before the stop began is gone from /proc then, and its launcher's log names its pid
        # only (failure.hung_rank).
        self._known: set[int] = set()  # pids of the ranks seen so far
        self._seen_at = 0.0

    # ---- called from other threads ------------------------------------------------------
    def request_stop(self, by: str = "") -> None:
        """Stop the job; ``by`` names who asked ("Ctrl-C"), for its reason."""
        if by and not self._stop_by:
            self._stop_by = by
        self._stop_requested.set()
        self._wake.set()

    def request_kill(self) -> None:
        """Skip the grace period (a second Ctrl-C)."""
        self._stop_requested.set()
        self._kill_requested.set()
        self._wake.set()

    # ---- the supervising thread ---------------------------------------------------------
    def _spawn(self, command: HostCommand) -> HostProcess:
        argv = [
            self.python, "-S", "-E", str(INIT_SCRIPT),
            "--grace", str(self.grace),
            "--parent", str(self.starter.parent_pid()),
            "--", *command.argv,
        ]  # fmt: skip
        process = self.starter.spawn(command, argv, subprocess.PIPE)
        assert process.stdout is not None
        reader = threading.Thread(
            target=pump,
            args=(process.stdout, self.log, command.host.name, command.tags, command.rank_hosts),
            name=f"smdist-log-{command.host.name}",
            daemon=True,
        )
        reader.start()
        return HostProcess(command, process, reader)

    def run(self) -> Outcome:
        """Start every host and return once all of their processes are gone."""
        outcome = self.outcome
        self.started_at = start = time.monotonic()
        self.log.touch()
        try:
            for command in self.commands:
                self.hosts.append(self._spawn(command))
            self.starter.all_spawned()
        except (OSError, RuntimeError) as error:  # RuntimeError: a host's network failed
            self.log.note(f"could not start a host process: {error}")
            outcome.stop_cause, outcome.stop_detail = FAILURE, str(error)
            failed = self.commands[min(len(self.hosts), len(self.commands) - 1)]
            outcome.failed_hosts.append(failed.host.name)
        finally:
            self.spawned.set()
        kill_at: float | None = None
        if outcome.stop_cause:
            kill_at = self._begin_stop()
        while True:
            now = time.monotonic()
            for host in self.hosts:
                if host.exit_code is None and host.process.poll() is not None:
                    host.exit_code = host.process.returncode
                    host.exited_at = now
                    name = host.command.host.name
                    outcome.exit_codes[name] = host.exit_code
                    if host.exit_code != 0 and outcome.stop_cause is None:
                        outcome.failed_hosts.append(name)
                        outcome.stop_cause = FAILURE
                        outcome.stop_detail = f"{name} exited with code {host.exit_code}"
                        self._report_failure(host)
                        kill_at = self._begin_stop()
            if all(host.exit_code is not None for host in self.hosts):
                break
            if outcome.stop_cause is None:
                self._see_ranks(now)
                cause = self._stop_reason(now, start)
                if cause is not None:
                    outcome.stop_cause, outcome.stop_detail = cause
                    kill_at = self._begin_stop()
            elif kill_at is not None and (now >= kill_at or self._kill_requested.is_set()):
                outcome.killed = True
                self._kill_everything()
                kill_at = None
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()
        for host in self.hosts:
            host.reader.join(timeout=5)
        outcome.leftovers = self._sweep()
        outcome.duration = time.monotonic() - start
        return outcome

    def _stop_reason(self, now: float, start: float) -> tuple[str, str] | None:
        if self._stop_requested.is_set():
            return REQUESTED, "stop requested" + (f" by {self._stop_by}" if self._stop_by else "")
        if self.stop_file and self.stop_file.exists():
            return REQUESTED, "stop requested by `smdist stop`"
        if self.max_run is not None and now - start >= self.max_run:
            return MAX_RUN, f"the job ran for max_run = {self.max_run:g} s"
        if self.stall_timeout is not None and now - self.log.last_output >= self.stall_timeout:
            detail = f"no output from any process for {self.stall_timeout:g} s"
            last = self.log.last_process_line()
            return STALL, detail + (f" (the last line was {last!r})" if last else "")
        return None

    def _report_failure(self, failed: HostProcess) -> None:
        """One line, as soon as a host fails: where (host, rank), how it ended and what it said
        last, and which hosts are stopped because of it."""
        failed.reader.join(timeout=DRAIN_SECONDS)  # its last lines name the rank
        name, code = failed.command.host.name, failed.exit_code or 0
        lines = [line for line in self.log.recent_lines() if line[1] != SMDIST]
        ranks = self._note_ranks()  # a stopped rank is named, not the one that noticed
        seen = self.outcome.seen_ranks
        diagnosis = local_failure.diagnose(
            lines, {name: code}, [name], self.single_launcher, ranks, seen
        )
        ended = local_failure.Ending.of_host_exit(code)
        if diagnosis is None:
            what = f"{name} ({ended})"
        else:
            what = diagnosis.summary()
            if diagnosis.ending is None and not diagnosis.stuck:  # one mpirun: its own status
                what += f" ({name}'s launcher: {ended})"
        others = [host.command.host.name for host in self.hosts if host.exit_code is None]
        if others:
            what += f"; stopping {', '.join(others)}: SIGTERM now, SIGKILL after {self.grace:g} s"
        self.log.note(f"[failure] {what}")

    def _roots(self) -> dict[str, int]:
        return {h.command.host.name: h.process.pid for h in self.hosts if h.exit_code is None}

    def _see_ranks(self, now: float) -> None:
        """Note which process is which rank, once every ``SEE_RANKS_EVERY`` seconds."""
        if now - self._seen_at >= SEE_RANKS_EVERY and proctree.available():
            self._seen_at = now
            self.outcome.seen_ranks += tuple(ranks_below(self._roots(), self._known))

    def _note_ranks(self) -> tuple[RankProcess, ...]:
        """The job's ranks as they stand, noted once, before any stop signal changes them."""
        if self.outcome.ranks is None:
            rank_hosts = next((c.rank_hosts for c in self.commands if c.rank_hosts), [])
            found = (
                rank_processes(self._roots(), self.token, rank_hosts)
                if proctree.available()
                else ()
            )
            self.outcome.ranks = found
        return self.outcome.ranks

    def _begin_stop(self) -> float:
        """SIGTERM to every host still running; returns when to stop waiting for them."""
        self._note_ranks()
        for host in self.hosts:
            if host.exit_code is None:
                target = self.starter.signal_pid(host.process)
                try:
                    if target is not None:
                        os.kill(target, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        return time.monotonic() + self.grace + KILL_MARGIN

    def _kill_everything(self) -> None:
        table = proctree.process_table()
        for host in self.hosts:
            if host.exit_code is None:
                proctree.kill_all(proctree.descendants(host.process.pid, table))
                proctree.kill_all([host.process.pid])
        proctree.kill_all(proctree.processes_with_token(self.token))

    def _sweep(self, timeout: float = 5.0) -> int:
        """Kill whatever still carries the job's token; returns how many there were."""
        if not proctree.available():
            return 0
        deadline = time.monotonic() + timeout
        killed: set[int] = set()
        while time.monotonic() < deadline:
            left = proctree.processes_with_token(self.token)
            if not left:
                break
            killed.update(left)
            proctree.kill_all(left)
            time.sleep(0.05)
        if killed:
            self.log.note(f"killed {len(killed)} leftover process(es) of the job")
        return len(killed)
