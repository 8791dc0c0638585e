"""``LocalJob``: one job on emulated hosts on this machine, from preparing its directory to its
end: the Job protocol (status, logs, wait, stop), the thread that supervises its processes, and
its ``job.json``."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.base import JobError, JobStatus
from smdist.backends.job_names import unique_job_name
from smdist.backends.job_records import STOP_FILE, process_identity
from smdist.backends.job_records import follow as follow_log
from smdist.backends.local.artifacts import output_location, upload_outputs
from smdist.backends.local.checkpoint_store import CheckpointStore
from smdist.backends.local.checkpoint_sync import CheckpointSync
from smdist.backends.local.environment import TOKEN_VARIABLE
from smdist.backends.local.host_start import (
    HostModeError,
    HostStarter,
    NamespaceHosts,
    SharedHosts,
    host_mode,
)
from smdist.backends.local.hostns.cluster import HostCluster
from smdist.backends.local.hosts import EmulatedHost, make_hosts
from smdist.backends.local.launch import HostCommand, prepare_commands
from smdist.backends.local.layout import LocalLayout
from smdist.backends.local.logs import JobLog
from smdist.backends.local.network import choose_host_names
from smdist.backends.local.options import LocalOptions
from smdist.backends.local.preparation import (
    command_notes,
    local_layout,
    make_job_dir,
    opening_notes,
    restore_kept_checkpoints,
    stage_files,
    write_commands_file,
)
from smdist.backends.local.processes import MAX_RUN, REQUESTED, Outcome, Supervisor
from smdist.backends.local.setup import (
    SAGEMAKER_BASE,
    PrepareError,
    check_tools,
    checkpoint_path,
)
from smdist.backends.local.shutdown_noise import QuietConsoleView
from smdist.backends.local.verdict import judge, summary_line, write_failure_file
from smdist.backends.safe_files import write_record

if TYPE_CHECKING:
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
        self.hosts: list[EmulatedHost] = []
        self.commands: list[HostCommand] = []
        self._starter: HostStarter = SharedHosts()
        self.output_dir: Path | None = None
        self.checkpoint_store: CheckpointStore | None = None
        self._checkpoint_sync: CheckpointSync | None = None
        self.outcome: Outcome | None = None
        self.log: JobLog | None = None
        self._status = JobStatus.IN_PROGRESS
        self._failure_reason: str | None = None
        self._model_artifacts: str | None = None
        self._supervisor: Supervisor | None = None
        self._stop_early = False
        self._stop_by = ""  # who asked for a stop made before the supervisor existed
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._go: threading.Event | None = None  # set: the thread started early may run the job
        self._abandoned = False  # preparation failed: the thread started early runs nothing
        self._started = time.monotonic()
        self._started_at = time.time()  # wall clock, for `smdist jobs` (monotonic is per boot)
        self._made_job_dir = False  # this job's own folder exists: its record may be written

    # ---- the Job protocol ---------------------------------------------------------------
    @property
    def status(self) -> JobStatus:
        if self._done.is_set():
            return self._status
        supervisor = self._supervisor
        stopping = self._stop_early or (
            supervisor is not None and supervisor.outcome.stop_cause in (REQUESTED, MAX_RUN)
        )
        return JobStatus.STOPPING if stopping else JobStatus.IN_PROGRESS

    @property
    def failure_reason(self) -> str | None:
        return self._failure_reason

    @property
    def model_artifacts(self) -> str | None:
        return self._model_artifacts

    def logs(self, follow: bool = False) -> Iterator[str]:
        """Every line so far as ``<host[ rRANK]> | <text>``; ``follow`` waits for the end."""
        assert self.log is not None
        yield from follow_log(self.log.path, self._done.is_set, follow)

    def wait(
        self, timeout: float | None = None, logs: bool = False, raise_on_failure: bool = False
    ) -> JobStatus:
        """Block until the job ends (or ``timeout``); ``logs`` shows the live log meanwhile
        (once a stop has begun, without the stopped processes' shutdown tracebacks, which
        stay in the log files: ``ShutdownNoise``).

        Ctrl-C stops the job (a second one kills it), waits for the end, then re-raises.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        view: QuietConsoleView | None = None
        shown = [0]

        def over() -> bool:
            return self._done.is_set() or (deadline is not None and time.monotonic() >= deadline)

        def console_view() -> QuietConsoleView | None:
            return (
                QuietConsoleView(self.options.console, self._stopping, self.log) if logs else None
            )

        try:
            try:
                if logs:
                    # The view's imports (rich) would hold the interpreter lock while this
                    # job's thread starts the hosts: made once they are started.
                    self._until_hosts_started(over)
                view = console_view()
                self._show_until(view, shown, over, timeout)
            except KeyboardInterrupt:
                view = view or console_view()
                self.stop(by="Ctrl-C")
                if self.log is not None and not self._done.is_set():
                    self.log.note("interrupted: stopping the job (Ctrl-C again kills it now)")
                try:
                    self._show_until(view, shown, self._done.is_set, None)
                except KeyboardInterrupt:
                    self.kill()
                    self._show_until(view, shown, self._done.is_set, None)
                raise
        finally:
            if view is not None:
                view.end()
        status = self.status
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self._failure_reason)
        return status

    def _until_hosts_started(self, over: Callable[[], bool]) -> None:
        while not over():
            supervisor = self._supervisor
            if supervisor is not None and supervisor.spawned.wait(0.05):
                return
            if supervisor is None:
                self._done.wait(0.005)

    def _show_until(self, view, shown: list[int], finished, timeout: float | None) -> None:
        """Print log lines (after the ``shown[0]`` already printed) until ``finished()``."""
        if view is None or self.log is None:
            self._done.wait(timeout)
            return
        lines = follow_log(self.log.path, finished, True, self.log.wait_for_lines)
        for index, line in enumerate(lines):
            if index >= shown[0]:
                view.show(line)
                shown[0] = index + 1

    def _stopping(self) -> str | None:
        """Whether a stop has begun: "requested" (asked for, or max_run), "failure" (a failed
        or stalled process), or None."""
        supervisor = self._supervisor
        cause = supervisor.outcome.stop_cause if supervisor is not None else None
        if self._stop_early or cause in (REQUESTED, MAX_RUN):
            return "requested"
        return None if cause is None else "failure"

    def stop(self, by: str = "") -> None:
        """Stop as SageMaker does (SIGTERM, SIGKILL after ``grace``); returns at once. ``by``
        names who asked ("Ctrl-C"), for the job's reason."""
        if self._done.is_set():
            return
        if self._supervisor is None:
            self._stop_early = True
            self._stop_by = self._stop_by or by
        else:
            self._supervisor.request_stop(by)

    def kill(self) -> None:
        """Stop without waiting for the grace period."""
        self.stop()
        if self._supervisor is not None:
            self._supervisor.request_kill()

    # ---- extras -------------------------------------------------------------------------
    @property
    def host_names(self) -> list[str]:
        return [host.name for host in self.hosts]

    @property
    def exit_codes(self) -> dict[str, int]:
        return dict(self.outcome.exit_codes) if self.outcome else {}

    def __repr__(self) -> str:
        return f"LocalJob(name={self.name!r}, status={self.status.value})"

    # ---- prepare ------------------------------------------------------------------------
    def _prepare(self) -> None:
        plan = self.plan
        began = time.monotonic()
        self.layout = layout = local_layout(plan, self.name, self.options)
        check_tools(plan, layout, self.python)
        try:
            mode = host_mode(self.options.namespaces, plan.spec.network.isolation)
        except HostModeError as error:
            raise PrepareError(f"{error} (options.namespaces / --namespaces)") from None
        names = choose_host_names(layout.hosts, own_network=mode.namespaces)
        host_checkpoints, checkpoint_note = checkpoint_path(plan)
        self.name, self.job_dir = make_job_dir(self.root, self.name, plan.spec.name)
        self._made_job_dir = True
        inside = Path(str(SAGEMAKER_BASE)) if mode.namespaces else None
        self.hosts = hosts = make_hosts(self.job_dir, names, host_checkpoints, inside)
        self.log = log = JobLog(self.job_dir / "logs", names.names)
        notes = opening_notes(self.name, plan, layout, names, self.job_dir, checkpoint_note)
        for line in [*notes, *(f"note: {note}" for note in mode.notes)]:
            log.note(f"[prepare] {line}")
        cluster = None
        if mode.namespaces:
            cluster = HostCluster(
                names.names,
                route_out=mode.route_out,
                user_namespace=mode.user_namespace,
                label=self.name,
                lend=[self.job_dir, Path(self.python)],
            )
            # Set now so that release() removes the cluster's run folder should the rest fail.
            self._starter = starter = NamespaceHosts(cluster, [host.base for host in hosts])
            self._start_thread_early()  # it makes the hosts' network while the code is copied
        # Its launch: what runs here; hosts in namespaces read FullyReplicated channels in place.
        channels, views = stage_files(layout.plan, hosts, self.job_dir, mode.namespaces)
        self._place_checkpoints_and_output(log)
        if cluster is not None:
            shown: dict[int, tuple[tuple[str, str], ...]] = {}
            for view in views:
                shown[view.host] = (*shown.get(view.host, ()), (str(view.source), str(view.target)))
            starter.views = shown
        prepared = prepare_commands(
            plan,
            layout,
            hosts,
            names,
            channels,
            job_dir=self.job_dir,
            token=self.token,
            python=self.python,
            tools=cluster.tools if cluster else None,
        )
        self.commands = prepared.commands
        if cluster is not None:  # the workers mpirun reaches run nothing of their own
            starter.idle = prepared.idle()
        write_commands_file(self.job_dir / "commands.txt", self.commands)
        log.note(f"[prepare] done in {time.monotonic() - began:.1f} s")
        self._write_record()

    def _place_checkpoints_and_output(self, log: JobLog) -> None:
        """The checkpoint store (kept checkpoints restored into every host) and the output
        location."""
        spec = self.plan.spec
        if spec.checkpoint is not None and spec.checkpoint.s3_uri:
            self.checkpoint_store = store = CheckpointStore.claim(
                self.root / "checkpoints" / spec.name, self.name, self.options.fresh
            )
            for line in restore_kept_checkpoints(store, spec.checkpoint.s3_uri, self.hosts):
                log.note(f"[prepare] {line}")
            self._checkpoint_sync = CheckpointSync(store, self.hosts, log)
        self.output_dir, output_note = output_location(spec, self.root / "jobs", self.name)
        if output_note:
            log.note(f"[prepare] note: {output_note}")

    def _abandon(self, error: BaseException) -> None:
        """Preparation failed (nothing started): remove what it copied into the hosts and the
        job's inputs, and leave a Failed record saying why, so ``smdist status`` reads the
        folder. Never raises: the error that ended preparation is the one to report."""
        self._status = JobStatus.FAILED
        self._failure_reason = f"the job could not be prepared: {error or type(error).__name__}"
        if self._made_job_dir:
            for part in ("hosts", "inputs"):
                shutil.rmtree(self.job_dir / part, ignore_errors=True)
            try:
                self._write_record(final=True)
            except OSError:
                pass  # a full disk: the error itself is shown; status says no record was kept
        if self.log is not None:
            self.log.note(f"[prepare] {self._failure_reason}")
            self.log.close()
        self._done.set()

    # ---- run ----------------------------------------------------------------------------
    def _start(self) -> None:
        if self._go is not None:  # started early, waiting for the rest of the preparation
            self._go.set()
            return
        self._thread = self._job_thread()
        self._thread.start()

    def _job_thread(self) -> threading.Thread:
        # Non-daemon: a script that launches without waiting still sees its job through.
        # The host processes (and their network) are started from this thread, whose end
        # they are tied to (their parent-death signal follows the thread that forked them).
        return threading.Thread(target=self._run, name=f"smdist-{self.name}")

    def _start_thread_early(self) -> None:
        """Start the job's thread during preparation: it opens the hosts' network (some tens
        of milliseconds of processes starting) meanwhile, then waits for ``_start``."""
        self._go = threading.Event()
        self._thread = self._job_thread()
        self._thread.start()

    def _cancel_start(self) -> None:
        """Preparation failed: the thread started early ends without running anything."""
        if self._go is not None and self._thread is not None:
            self._abandoned = True
            self._go.set()
            self._thread.join()

    def _run(self) -> None:
        if self._go is not None:
            self._starter.open_network()  # a failure is raised by open(), below, in the job
            self._go.wait()
            if self._abandoned:
                return
        self._run_job()

    def _run_job(self) -> None:
        assert self.log is not None and self.layout is not None
        log = self.log
        try:
            max_run = self.options.max_run or self.plan.spec.max_run
            self._supervisor = supervisor = Supervisor(
                self.commands,
                log,
                token=f"{TOKEN_VARIABLE}={self.token}",
                python=self.python,
                grace=self.options.grace,
                max_run=max_run,
                stall_timeout=self.options.stall_timeout,
                stop_file=self.job_dir / STOP_FILE,
                single_launcher=self.layout.launcher.uses_mpi,
                starter=self._starter,
            )
            if self._stop_early:
                supervisor.request_stop(self._stop_by)
            for line in command_notes(self.commands, self.job_dir):
                log.note(f"[start] {line}")
            log.note(f"[train] running (max_run {max_run:g} s)")
            if self._checkpoint_sync is not None:
                self._checkpoint_sync.start()
            opened = self._starter.open()  # from this thread: the hosts' lives are tied to it
            if opened:
                log.note(f"[start] note: {opened}")
            self.outcome = outcome = supervisor.run()
            self._starter.close()  # nothing of the hosts is left before their files are read
            status, reason, failing_host = judge(
                outcome, log, self.hosts, self.layout.launcher.uses_mpi
            )
            self._failure_reason = reason
            if failing_host is not None:
                try:
                    write_failure_file(self.hosts, failing_host, reason or "")
                except OSError as error:  # the reason is in the log and the record anyway
                    log.note(f"[end] could not write the failing host's output/failure: {error}")
            unkept = self._upload(status)
            if unkept:  # a full disk, a read-only folder: the job's output is not whole
                status = JobStatus.FAILED
                more = f" (and {len(unkept) - 1} more, in the log)" if len(unkept) > 1 else ""
                reason = reason or f"could not keep the job's output: {unkept[0]}{more}"
                self._failure_reason = reason
            self._status = status
            elapsed = time.monotonic() - self._started
            log.note(summary_line(status, elapsed, reason, self._model_artifacts))
        except Exception as error:  # noqa: BLE001 - the job must end with a status, not hang
            self._status = JobStatus.FAILED
            self._failure_reason = f"the local backend failed: {error}"
            log.note(traceback.format_exc())
            if self._supervisor is not None:
                self._supervisor.request_kill()
        finally:
            try:
                self._finish(log)
            finally:  # whatever failed above: waiters, Ctrl-C and SIGTERM are never left hanging
                self._done.set()
                log.close()

    def _finish(self, log: JobLog) -> None:
        """Release what the job held and write its final record; a failure to do either (a
        read-only or full disk) is said in the log and the status, never raised."""
        try:
            self.release()
        except Exception as error:  # noqa: BLE001 - the job must still end
            log.note(f"[end] could not release the job's hosts and checkpoints: {error}")
        try:
            self._write_record(final=True)
        except OSError as error:  # the job's outcome stands: only its record is missing
            log.note(
                f"[end] could not write the job's record {self.job_dir / 'job.json'}: "
                f"{error.strerror or error} (is its folder read-only, or the disk full?); "
                "`smdist status` will say the job ended without an outcome"
            )

    def _upload(self, status: JobStatus) -> list[str]:
        """Checkpoints, model and output data kept, each on its own; returns what could not be
        kept (a full disk, a read-only folder), one sentence each, as the log says it."""
        assert self.log is not None and self.output_dir is not None
        began = time.monotonic()
        unkept = []
        if self._checkpoint_sync is not None:
            try:  # whatever the status: nothing kept is lost
                unkept += self._checkpoint_sync.finish()
            except OSError as error:
                unkept.append(f"the checkpoints could not be kept: {error}")
            for sentence in unkept:
                self.log.note(f"[upload] {sentence}")
        try:
            self._model_artifacts, lost = upload_outputs(
                self.log,
                self.hosts,
                self.output_dir,
                keep_model=status in (JobStatus.COMPLETED, JobStatus.STOPPED),
                began=began,
            )
        except OSError as error:  # the output folder itself could not be made
            lost = [f"the output could not be written to {self.output_dir}: {error}"]
            self.log.note(f"[upload] {lost[0]}")
        return unkept + lost

    def release(self) -> None:
        """End the hosts' network, stop syncing and let the checkpoint store go (the job
        ended, or never started)."""
        self._starter.close()
        if self._checkpoint_sync is not None:
            self._checkpoint_sync.stop()
        if self.checkpoint_store is not None:
            self.checkpoint_store.release()

    def _write_record(self, final: bool = False) -> None:
        """``job.json`` in the job directory: what ``status`` and ``failure_reason`` say."""
        record = {
            "name": self.name,
            "backend": self.backend,
            "status": (self._status if final else self.status).value,
            "failure_reason": self._failure_reason,
            "model_artifacts": self._model_artifacts,
            "hosts": self.host_names,
            "processes_per_host": self.layout.processes_per_host if self.layout else None,
            "exit_codes": self.exit_codes,
            "job_dir": str(self.job_dir),
            "log": str(self.log.path) if self.log else None,
            "supervisor": process_identity(),  # [pid, start]: is it running?
            "started": round(self._started_at, 3),
        }
        if self.job_dir.is_dir():  # never half written, never through a link placed there
            write_record(self.job_dir / "job.json", json.dumps(record, indent=1) + "\n")
