"""The local backend: run a Plan on this machine as SageMaker would run it, without Docker.

``launch(plan, **options)`` emulates the job's hosts (``algo-1``, ``algo-2``, ...) as
directories standing in for ``/opt/ml``, each with SageMaker's config files, channels, code
and ``SM_*`` environment; starts each distribution the way its container does (a process per
host, torchrun per host, one mpirun across the hosts); streams one log; and
supervises the processes until the job completes, fails or is stopped, leaving none behind.
It returns a ``LocalJob`` at once; ``wait()`` follows it.

Its options (``smdist.fit(..., options={...})``, ``smdist run`` flags) are ``LocalOptions``.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.backends.base import JobError, JobStatus
from smdist.backends.job_names import unique_job_name
from smdist.backends.local import failure as local_failure
from smdist.backends.local import processes as local_processes
from smdist.backends.local import proctree as local_proctree
from smdist.backends.local.artifacts import (
    kept_files,
    output_location,
    restore_checkpoints,
    stage_channels,
    upload_outputs,
)
from smdist.backends.local.hosts import (
    TOKEN_VARIABLE,
    EmulatedHost,
    make_hosts,
)
from smdist.backends.local.launch import HostCommand, prepare_commands
from smdist.backends.local.layout import LocalLayout, plan_layout
from smdist.backends.local.logs import ConsoleView, JobLog
from smdist.backends.local.logs import follow as follow_log
from smdist.backends.local.network import choose_host_names
from smdist.backends.local.processes import MAX_RUN, REQUESTED, STALL, Outcome, Supervisor
from smdist.backends.local.setup import (
    LocalOptions,
    PrepareError,
    check_tools,
    checkpoint_path,
    job_region,
    prepare_notes,
)
from smdist.packaging.exclusions import mark_local_root

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
        self.output_dir: Path | None = None
        self.checkpoint_store: Path | None = None
        self.set_aside: Path | None = None  # a fresh job's new home for earlier checkpoints
        self.outcome: Outcome | None = None
        self.log: JobLog | None = None
        self._status = JobStatus.IN_PROGRESS
        self._failure_reason: str | None = None
        self._model_artifacts: str | None = None
        self._supervisor: Supervisor | None = None
        self._stop_early = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()

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
        """Block until the job ends (or ``timeout``); ``logs`` shows the live log meanwhile.

        Ctrl-C stops the job (a second one kills it), waits for the end, then re-raises.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        view = ConsoleView(self.options.console) if logs else None
        shown = [0]

        def over() -> bool:
            return self._done.is_set() or (deadline is not None and time.monotonic() >= deadline)

        try:
            self._show_until(view, shown, over, timeout)
        except KeyboardInterrupt:
            self.stop()
            if self.log is not None and not self._done.is_set():
                self.log.note("interrupted: stopping the job (Ctrl-C again kills it now)")
            try:
                self._show_until(view, shown, self._done.is_set, None)
            except KeyboardInterrupt:
                self.kill()
                self._show_until(view, shown, self._done.is_set, None)
            raise
        status = self.status
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self._failure_reason)
        return status

    def _show_until(self, view, shown: list[int], finished, timeout: float | None) -> None:
        """Print log lines (after the ``shown[0]`` already printed) until ``finished()``."""
        if view is None or self.log is None:
            self._done.wait(timeout)
            return
        for index, line in enumerate(follow_log(self.log.path, finished, True)):
            if index >= shown[0]:
                view.show(line)
                shown[0] = index + 1

    def stop(self) -> None:
        """Stop as SageMaker does (SIGTERM, SIGKILL after ``grace``); returns at once."""
        if self._done.is_set():
            return
        if self._supervisor is None:
            self._stop_early = True
        else:
            self._supervisor.request_stop()

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
        plan, options = self.plan, self.options
        began = time.monotonic()
        self.layout = layout = plan_layout(
            plan,
            job_name=self.name,
            region=job_region(plan),
            hosts=options.hosts,
            processes_per_host=options.processes_per_host,
            use_gpus=options.use_gpus,
        )
        check_tools(plan, layout, self.python)
        names = choose_host_names(layout.hosts)
        host_checkpoints, checkpoint_note = checkpoint_path(plan)
        while self.job_dir.exists():  # two jobs started within the same second
            self.name = unique_job_name(plan.spec.name)
            self.job_dir = self.root / "jobs" / self.name
        mark_local_root(self.root)  # never packed into a later job's code, wherever it lies
        self.job_dir.mkdir(parents=True)
        self.hosts = hosts = make_hosts(self.job_dir, names, host_checkpoints)
        self.log = log = JobLog(self.job_dir / "logs", names.names)
        spec = plan.spec
        log.note(
            f"[prepare] job {self.name}: {spec.strategy.kind} ({layout.launcher.description}), "
            f"{layout.hosts} host{'s' if layout.hosts > 1 else ''} x "
            f"{layout.processes_per_host} process{'es' if layout.processes_per_host > 1 else ''}"
            f" emulating {spec.cluster.instance_type}; directory {self.job_dir}"
        )
        for line in prepare_notes(plan, layout, names.names if not names.by_name else None):
            log.note(f"[prepare] {line}")
        if checkpoint_note:
            log.note(f"[prepare] note: {checkpoint_note}")

        from smdist.packaging import bundle as packaging

        code = packaging.bundle(plan)  # the upload's file list: what SageMaker's hosts would get
        for host in hosts:
            host.create(list(spec.inputs))
            packaging.stage(plan, host.code, code)
        try:
            channels = stage_channels(spec.inputs, hosts, self.job_dir / "inputs")
        except (OSError, RuntimeError) as error:
            raise PrepareError(str(error)) from error
        if spec.checkpoint is not None and spec.checkpoint.s3_uri:
            self.checkpoint_store = store = self.root / "checkpoints" / spec.name
            for line in self._restore(store, spec.checkpoint.s3_uri):
                log.note(f"[prepare] {line}")
        self.output_dir, output_note = output_location(spec, self.root / "jobs", self.name)
        if output_note:
            log.note(f"[prepare] note: {output_note}")

        self.commands = prepare_commands(
            plan,
            layout,
            hosts,
            names,
            channels,
            job_dir=self.job_dir,
            token=self.token,
            python=self.python,
        )
        with open(self.job_dir / "commands.txt", "w") as handle:
            for command in self.commands:
                handle.write(f"{command.host.name}: {shlex.join(command.argv)}\n")
        log.note(f"[prepare] done in {time.monotonic() - began:.1f} s")
        self._write_record()

    def _restore(self, store: Path, s3_uri: str) -> list[str]:
        """Kept checkpoints into every host (as SageMaker syncs checkpoint_s3_uri), unless the
        job starts fresh; what happened, as lines for the log."""
        if not self.options.fresh:
            restored = restore_checkpoints(store, self.hosts)
            if not restored:
                return []
            return [
                f"restored {restored} checkpoint file(s) from {store} into every host "
                f"(checkpoint s3_uri {s3_uri}): the job resumes from them; to start fresh, "
                "run `smdist run --fresh ...` (smdist.fit: options={'fresh': True})"
            ]
        # Set aside, never deleted, and only once this job has checkpoints of its own.
        self.set_aside = store.with_name(f"{store.name}.before-{self.name}")
        kept = kept_files(store)
        if not kept:
            return []
        return [
            f"starting fresh: the {kept} checkpoint file(s) in {store} are not restored; they "
            f"stay there until this job writes checkpoints, then move to {self.set_aside}"
        ]

    # ---- run ----------------------------------------------------------------------------
    def _start(self) -> None:
        # Non-daemon: a script that launches without waiting still sees its job through.
        # The host processes are started from this thread, whose end they are tied to.
        self._thread = threading.Thread(target=self._run, name=f"smdist-{self.name}")
        self._thread.start()

    def _run(self) -> None:
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
                stop_file=self.job_dir / local_processes.STOP_FILE,
                single_launcher=self.layout.launcher.uses_mpi,
            )
            if self._stop_early:
                supervisor.request_stop()
            for command in self.commands:
                shown = shlex.join(command.argv)
                if len(shown) > 400:
                    shown = shown[:400] + f" ... (full command in {self.job_dir}/commands.txt)"
                log.note(f"[start] {command.host.name}: {shown}")
            log.note(f"[train] running (max_run {max_run:g} s)")
            self.outcome = outcome = supervisor.run()
            status, reason, failing_host = self._judge(outcome)
            self._failure_reason = reason
            if failing_host is not None:
                self._write_failure(failing_host, reason or "")
            self._upload(status)
            self._status = status
            elapsed = time.monotonic() - self._started
            summary = f"{status.value} in {elapsed:.1f} s"
            if reason:
                summary += f": {reason}"
            if self._model_artifacts:
                summary += f"; model artifacts {self._model_artifacts}"
            log.note(summary)
        except Exception as error:  # noqa: BLE001 - the job must end with a status, not hang
            self._status = JobStatus.FAILED
            self._failure_reason = f"the local backend failed: {error}"
            log.note(traceback.format_exc())
            if self._supervisor is not None:
                self._supervisor.request_kill()
        finally:
            self._write_record(final=True)
            self._done.set()
            log.close()

    def _judge(
        self, outcome: Outcome
    ) -> tuple[JobStatus, str | None, local_failure.Failure | None]:
        """The job's status, its failure reason, and the failing rank (for output/failure)."""
        assert self.log is not None and self.layout is not None
        if outcome.stop_cause == REQUESTED:
            return JobStatus.STOPPED, "stop requested", None
        if outcome.stop_cause == MAX_RUN:
            return JobStatus.STOPPED, f"MaxRuntimeExceeded: {outcome.stop_detail}", None
        if outcome.succeeded:
            return JobStatus.COMPLETED, None, None
        # What the hosts' processes wrote; smdist's own notes say nothing about a rank.
        lines = [line for line in self.log.recent if line[1] in self.host_names]
        if outcome.stop_cause == STALL:
            reason = (
                f"AlgorithmError: the job stalled: {outcome.stop_detail}; a process is "
                "probably hung (raise stall_timeout if it was only slow)"
            )
            main = self.hosts[0].name
            said = tuple(local_failure.rank_lines(lines, main, None))
            return JobStatus.FAILED, reason, local_failure.Failure(main, None, None, None, said)
        # Under one launcher (mpirun) for every host, any host's ranks may hold the cause.
        single_launcher = self.layout.launcher.uses_mpi
        failure = local_failure.diagnose(
            lines, outcome.exit_codes, outcome.failed_hosts, single_launcher
        )
        if failure is None or not (failure.ending or failure.message or failure.last_lines):
            # Nothing ran far enough to say anything (a host process could not start).
            first = outcome.failed_hosts[0] if outcome.failed_hosts else self.hosts[0].name
            reason = f"AlgorithmError: {outcome.stop_detail or 'a process failed'}"
            return JobStatus.FAILED, reason, local_failure.Failure(first, None, None, None, ())
        return JobStatus.FAILED, failure.reason(), failure

    def _write_failure(self, failure: local_failure.Failure, reason: str) -> None:
        """``output/failure`` of the failing host, as SageMaker keeps it: the reason, then
        what the failing rank wrote last."""
        by_name = {host.name: host for host in self.hosts}
        host = by_name.get(failure.host, self.hosts[0])
        written = "\n".join(failure.last_lines) or "(nothing)"
        host.failure_file.parent.mkdir(parents=True, exist_ok=True)
        host.failure_file.write_text(f"{reason}\n\nLast lines of {failure.where}:\n{written}\n")

    def _upload(self, status: JobStatus) -> None:
        assert self.log is not None and self.output_dir is not None
        self._model_artifacts = upload_outputs(
            self.log,
            self.hosts,
            self.output_dir,
            self.checkpoint_store,
            keep_model=status in (JobStatus.COMPLETED, JobStatus.STOPPED),
            set_aside=self.set_aside,
        )

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
            "supervisor": local_processes.process_identity(),  # [pid, start]: is it running?
        }
        path = self.job_dir / "job.json"
        if self.job_dir.is_dir():
            path.write_text(json.dumps(record, indent=1) + "\n")


def launch(plan: Plan, **options: Any) -> LocalJob:
    """Prepare the emulated hosts and start the job; returns at once (``wait()`` follows it).

    Raises SpecError for options or inputs that cannot work, PrepareError when this machine
    lacks what the distribution needs; nothing is started in either case.
    """
    if not local_proctree.available():
        raise PrepareError("the local backend needs Linux (/proc) to supervise its processes")
    job = LocalJob(plan, LocalOptions.from_keywords(options))
    try:
        job._prepare()
    except BaseException:
        if job.log is not None:
            job.log.close()
        raise
    job._start()
    return job


__all__ = ["LocalJob", "LocalOptions", "PrepareError", "launch"]
