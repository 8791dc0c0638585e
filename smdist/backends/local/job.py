"""``LocalJob``: one job on emulated hosts on this machine, as a short story, and the Job
protocol (status, logs, wait, stop) for the caller that started it.

1. **Prepare**: the plan fitted to this machine, the hosts chosen (``hosts.choice``) and made,
   the code and channels staged, kept checkpoints restored, each host's command written.
2. **Start**: the job's thread (``JobThread``) starts the hosts' first processes.
3. **Supervise** (``Supervisor``): until they end, fail, stall, run out of time or are stopped.
4. **Finish**: the verdict and the outputs kept (``reports.verdict``), the hosts released,
   ``job.json`` written; any failure on the way still ends the job with a status and reason.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.base import JobError, JobStatus
from smdist.backends.job_names import unique_job_name
from smdist.backends.job_records import STOP_FILE
from smdist.backends.job_records import follow as follow_log
from smdist.backends.local.data.checkpoint_store import CheckpointStore
from smdist.backends.local.data.checkpoint_sync import CheckpointSync
from smdist.backends.local.data.outputs import keep_outputs, place_job_data
from smdist.backends.local.hosts.choice import HostModeError, choose_hosts
from smdist.backends.local.hosts.folders import EmulatedHost, make_hosts
from smdist.backends.local.options import LocalOptions
from smdist.backends.local.preparation.files import (
    command_notes,
    local_layout,
    make_job_dir,
    opening_notes,
    stage_files,
    write_commands_file,
)
from smdist.backends.local.preparation.layout import LocalLayout
from smdist.backends.local.preparation.setup import PrepareError, check_tools, checkpoint_path
from smdist.backends.local.processes.commands import prepare_commands
from smdist.backends.local.processes.environment import TOKEN_VARIABLE
from smdist.backends.local.processes.host_command import HostCommand
from smdist.backends.local.processes.job_thread import JobThread
from smdist.backends.local.processes.supervisor import MAX_RUN, REQUESTED, Outcome, Supervisor
from smdist.backends.local.reports.console import follow_until_done
from smdist.backends.local.reports.logs import JobLog
from smdist.backends.local.reports.record import write_final_record, write_job_record
from smdist.backends.local.reports.verdict import conclude, summary_line

if TYPE_CHECKING:
    from smdist.backends.local.hosts.base import HostSet
    from smdist.planning.plan import Plan


class LocalJob:
    """A job running (or finished) on emulated hosts on this machine; see ``smdist.Job``."""

    backend = "local"

    def __init__(self, plan: Plan, options: LocalOptions) -> None:
        self.plan = plan
        self.options = options
        self.name = options.job_name or unique_job_name(plan.spec.name)
        self.root = options.root.resolve()
        self.job_dir = self.root / "jobs" / self.name
        self.python = options.python or sys.executable
        self.token = uuid.uuid4().hex
        self.layout: LocalLayout | None = None
        self.host_set: HostSet | None = None
        self.hosts: list[EmulatedHost] = []
        self.commands: list[HostCommand] = []
        self.output_dir: Path | None = None
        self.checkpoint_store: CheckpointStore | None = None
        self.checkpoint_sync: CheckpointSync | None = None
        self.outcome: Outcome | None = None
        self.log: JobLog | None = None
        self.supervisor: Supervisor | None = None
        self.done = threading.Event()
        self.thread = JobThread(self.name, self._run)
        self._status = JobStatus.IN_PROGRESS
        self._failure_reason: str | None = None
        self._model_artifacts: str | None = None
        self._stop_early = False
        self._stop_by = ""  # who asked for a stop made before the supervisor existed
        self._started = time.monotonic()
        self._started_at = time.time()  # wall clock, for `smdist jobs` (monotonic is per boot)
        self._made_job_dir = False  # this job's own folder exists: its record may be written

    # ---- the Job protocol ---------------------------------------------------------------
    @property
    def status(self) -> JobStatus:
        if self.done.is_set():
            return self._status
        return JobStatus.STOPPING if self.stopping() == "requested" else JobStatus.IN_PROGRESS

    @property
    def failure_reason(self) -> str | None:
        return self._failure_reason

    @property
    def model_artifacts(self) -> str | None:
        return self._model_artifacts

    def logs(self, follow: bool = False) -> Iterator[str]:
        """Every line so far as ``<host[ rRANK]> | <text>``; ``follow`` waits for the end."""
        assert self.log is not None
        yield from follow_log(self.log.path, self.done.is_set, follow)

    def wait(
        self, timeout: float | None = None, logs: bool = False, raise_on_failure: bool = False
    ) -> JobStatus:
        """Block until the job ends (or ``timeout``); ``logs`` shows the live log meanwhile
        (``reports.console``). Ctrl-C stops the job (a second one kills it), then re-raises."""
        follow_until_done(self, timeout, logs)
        status = self.status
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self._failure_reason)
        return status

    def stopping(self) -> str | None:
        """Whether a stop has begun: "requested" (asked for, or max_run), "failure" (a failed
        or stalled process), or None."""
        supervisor = self.supervisor
        cause = supervisor.outcome.stop_cause if supervisor is not None else None
        if self._stop_early or cause in (REQUESTED, MAX_RUN):
            return "requested"
        return None if cause is None else "failure"

    def stop(self, by: str = "") -> None:
        """Stop as SageMaker does (SIGTERM, SIGKILL after ``grace``); returns at once. ``by``
        names who asked ("Ctrl-C"), for the job's reason."""
        if self.done.is_set():
            return
        if self.supervisor is None:
            self._stop_early = True
            self._stop_by = self._stop_by or by
        else:
            self.supervisor.request_stop(by)

    def kill(self) -> None:
        """Stop without waiting for the grace period."""
        self.stop()
        if self.supervisor is not None:
            self.supervisor.request_kill()

    final_status = property(lambda self: self._status)  # what job.json says once it ended
    started_at = property(lambda self: round(self._started_at, 3))

    @property
    def host_names(self) -> list[str]:
        return [host.name for host in self.hosts]

    @property
    def exit_codes(self) -> dict[str, int]:
        return dict(self.outcome.exit_codes) if self.outcome else {}

    def __repr__(self) -> str:
        return f"LocalJob(name={self.name!r}, status={self.status.value})"

    # ---- 1. prepare ---------------------------------------------------------------------
    def prepare(self) -> None:
        plan, began = self.plan, time.monotonic()
        self.layout = layout = local_layout(plan, self.name, self.options)
        check_tools(plan, layout, self.python)
        try:
            self.host_set = host_set = choose_hosts(
                self.options.namespaces, plan.spec.network.isolation
            )
        except HostModeError as error:
            raise PrepareError(f"{error} (options.namespaces / --namespaces)") from None
        names = host_set.names(layout.hosts)
        host_checkpoints, checkpoint_note = checkpoint_path(plan)
        self.name, self.job_dir = make_job_dir(self.root, self.name, plan.spec.name)
        self._made_job_dir = True
        self.hosts = make_hosts(self.job_dir, names, host_checkpoints, host_set.inside)
        self.log = log = JobLog(self.job_dir / "logs", names.names)
        notes = opening_notes(self.name, plan, layout, names, self.job_dir, checkpoint_note)
        for line in [*notes, *(f"note: {note}" for note in host_set.notes)]:
            log.note(f"[prepare] {line}")
        if host_set.prepare(self.job_dir, self.hosts, self.python, self.name):
            self.thread.start_early(host_set.open_network)  # meanwhile the code is copied
        # The layout's plan is what runs here.
        channels, views = stage_files(
            layout.plan, self.hosts, self.job_dir, host_set.reads_channels_in_place,
            self.options.file_systems,
        )  # fmt: skip
        self.checkpoint_store, self.checkpoint_sync, self.output_dir = place_job_data(
            self.plan, self.root, self.name, self.options.fresh, self.hosts, log
        )
        prepared = prepare_commands(
            layout.plan, layout, self.hosts, names, channels,
            job_dir=self.job_dir, token=self.token, python=self.python, host_set=host_set,
        )  # fmt: skip
        self.commands = prepared.commands
        shown: dict[int, tuple[tuple[str, str], ...]] = {}
        for view in views:
            shown[view.host] = (*shown.get(view.host, ()), (str(view.source), str(view.target)))
        host_set.commands_ready(prepared, shown)
        write_commands_file(self.job_dir / "commands.txt", self.commands)
        log.note(f"[prepare] done in {time.monotonic() - began:.1f} s")
        write_job_record(self)

    def abandon(self, error: BaseException) -> None:
        """Preparation failed (nothing started): the thread started early ends, what was
        copied into the hosts goes, and a Failed record says why, so ``smdist status`` reads
        the folder. Never raises: the error that ended preparation is the one to report."""
        self.thread.cancel()
        self.release()
        self._status = JobStatus.FAILED
        self._failure_reason = f"the job could not be prepared: {error or type(error).__name__}"
        if self._made_job_dir:
            for part in ("hosts", "inputs"):
                shutil.rmtree(self.job_dir / part, ignore_errors=True)
            try:
                write_job_record(self, final=True)
            except OSError:
                pass  # a full disk: the error itself is shown; status says no record was kept
        if self.log is not None:
            self.log.note(f"[prepare] {self._failure_reason}")
            self.log.close()
        self.done.set()

    # ---- 2. start, 3. supervise -----------------------------------------------------------
    def start(self) -> None:
        self.thread.go()

    def _run(self) -> None:
        assert self.log is not None and self.layout is not None and self.host_set is not None
        log = self.log
        try:
            max_run = self.options.max_run or self.plan.spec.max_run
            self.supervisor = supervisor = Supervisor(
                self.commands, log, token=f"{TOKEN_VARIABLE}={self.token}", python=self.python,
                grace=self.options.grace, max_run=max_run,
                stall_timeout=self.options.stall_timeout, stop_file=self.job_dir / STOP_FILE,
                single_launcher=self.layout.launcher.uses_mpi, starter=self.host_set,
            )  # fmt: skip
            if self._stop_early:
                supervisor.request_stop(self._stop_by)
            for line in command_notes(self.commands, self.job_dir):
                log.note(f"[start] {line}")
            log.note(f"[train] running (max_run {max_run:g} s)")
            if self.checkpoint_sync is not None:
                self.checkpoint_sync.start()
            opened = self.host_set.open()  # from this thread: the hosts' lives are tied to it
            if opened:
                log.note(f"[start] note: {opened}")
            self.outcome = supervisor.run()
            self.host_set.close()  # nothing of the hosts is left before their files are read
            self._end(log)
        except Exception as error:  # noqa: BLE001 - the job must end with a status, not hang
            self._status = JobStatus.FAILED
            self._failure_reason = f"the local backend failed: {error}"
            log.note(traceback.format_exc())
            if self.supervisor is not None:
                self.supervisor.request_kill()
        finally:
            try:
                self._finish(log)
            finally:  # whatever failed above: waiters, Ctrl-C and SIGTERM are never left hanging
                self.done.set()
                log.close()

    # ---- 4. finish ------------------------------------------------------------------------
    def _end(self, log: JobLog) -> None:
        assert self.outcome is not None and self.layout is not None
        assert self.output_dir is not None
        self._status, self._failure_reason, self._model_artifacts = conclude(
            self.outcome, log, self.hosts, self.layout.launcher.uses_mpi,
            lambda keep_model: keep_outputs(
                log, self.hosts, self.output_dir, self.checkpoint_sync, keep_model
            ),
        )  # fmt: skip
        elapsed = time.monotonic() - self._started
        log.note(summary_line(self._status, elapsed, self._failure_reason, self._model_artifacts))

    def _finish(self, log: JobLog) -> None:
        """Release what the job held and write its final record; a failure to do either (a
        read-only or full disk) is said in the log and the status, never raised."""
        try:
            self.release()
        except Exception as error:  # noqa: BLE001 - the job must still end
            log.note(f"[end] could not release the job's hosts and checkpoints: {error}")
        write_final_record(self, log)

    def release(self) -> None:
        """End the hosts' network, stop syncing and let the checkpoint store go (the job
        ended, or never started)."""
        if self.host_set is not None:
            self.host_set.close()
        if self.checkpoint_sync is not None:
            self.checkpoint_sync.stop()
        if self.checkpoint_store is not None:
            self.checkpoint_store.release()
