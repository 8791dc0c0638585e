"""A job on a HyperPod Slurm cluster as its caller sees it (the ``Job`` protocol): its status
from Slurm and from its folder, its log, a wait, a stop.

Status, in SageMaker's words: what ``scontrol`` (or ``sacct``) says while Slurm remembers the
job; after that, the exit code the batch step left in the job folder. A requeued job is in
progress again (Slurm counts its restarts). A stop asked for with ``smdist stop`` makes a job
that ends anyhow but completed ``Stopped``.

Stop: SIGTERM to every step of the job (``scancel --signal=TERM``: torchrun and the training
processes, which checkpoint and exit), then, when the job still runs after the grace period,
``scancel``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from smdist.backends.base import JobError, JobStatus
from smdist.backends.hyperpod_slurm import slurm
from smdist.backends.hyperpod_slurm.head import Head
from smdist.backends.hyperpod_slurm.layout import JobFolder
from smdist.backends.hyperpod_slurm.log_lines import LogReader, last_error

ACTIVE = frozenset(
    "PENDING CONFIGURING RUNNING COMPLETING REQUEUED REQUEUE_HOLD REQUEUE_FED RESIZING "
    "SUSPENDED SIGNALING STAGE_OUT SPECIAL_EXIT RESV_DEL_HOLD STOPPED".split()
)
ENDS = {"COMPLETED": JobStatus.COMPLETED, "CANCELLED": JobStatus.STOPPED}
ERROR_TAIL = 65536  # bytes of the log read for a failure reason


class SlurmJob:
    """The job a record (``records``) names."""

    backend = "hyperpod-slurm"

    def __init__(
        self, record: dict[str, Any], plan: Any = None, notes: tuple[str, ...] = ()
    ) -> None:
        self.record, self.plan, self.notes = record, plan, notes
        self.name = str(record["name"])
        self.slurm_job_id = int(record["slurm_job_id"])
        self.head = Head(record.get("head_node"))
        given = record.get("checkpoint_dir")
        self.folder = JobFolder(
            PurePosixPath(record["job_root"]), self.name, PurePosixPath(given) if given else None
        )
        self.poll_seconds = float(record.get("poll_seconds") or 5.0)
        self.grace = float(record.get("grace") or 30.0)

    def describe(self) -> slurm.SlurmState | None:
        return slurm.describe(self.head, self.slurm_job_id)

    @property
    def stop_requested(self) -> bool:
        return self.head.read_bytes(self.folder.stop_requested) is not None

    def state(self) -> tuple[JobStatus, slurm.SlurmState | None]:
        """(the status, Slurm's description when it has one)."""
        described = self.describe()
        stopping = self.stop_requested
        if described is not None:
            word = described.state.split()[0] if described.state else "PENDING"
            if word in ACTIVE:
                return (JobStatus.STOPPING if stopping else JobStatus.IN_PROGRESS), described
            status = ENDS.get(word, JobStatus.FAILED)
        else:
            code = self.exit_code()
            status = JobStatus.COMPLETED if code == 0 else JobStatus.FAILED
        if stopping and status is JobStatus.FAILED:
            status = JobStatus.STOPPED
        return status, described

    @property
    def status(self) -> JobStatus:
        return self.state()[0]

    def exit_code(self) -> int | None:
        """The batch step's exit code, from the job folder (None: it left none)."""
        raw = self.head.read_bytes(self.folder.exit_code)
        text = raw.decode(errors="replace").strip() if raw is not None else ""
        return int(text) if text.lstrip("-").isdigit() else None

    @property
    def log_path(self) -> PurePosixPath:
        return self.folder.log(self.slurm_job_id)

    @property
    def model_artifacts(self) -> str | None:
        return f"file://{self.folder.model}" if self.status is JobStatus.COMPLETED else None

    @property
    def failure_reason(self) -> str | None:
        status, described = self.state()
        if status in (JobStatus.COMPLETED, JobStatus.IN_PROGRESS):
            return None
        if status in (JobStatus.STOPPED, JobStatus.STOPPING):
            if self.stop_requested:
                return "a stop was asked for (smdist stop): SIGTERM to every step"
            return "cancelled in Slurm (scancel, or the cluster)"
        if described is not None:
            said = f"Slurm says {described.state} (exit code {described.exit_code})"
            if described.reason and described.reason != "None":
                said += f", reason {described.reason}"
        else:
            code = self.exit_code()
            said = (
                f"the batch step exited {code}"
                if code is not None
                else "Slurm no longer knows the job and its folder holds no exit code (it was "
                "cancelled, or its node failed)"
            )
        tail = self.head.read_tail(self.log_path, ERROR_TAIL)
        error = last_error(LogReader(lambda offset: tail).lines(final=True)) if tail else None
        return f"{said}; {error}" if error else f"{said}; see {self.log_path}"

    def reader(self) -> LogReader:
        return LogReader(lambda offset: self.head.read_bytes(self.log_path, offset))

    def logs(self, follow: bool = False) -> Iterator[str]:
        """``<node> | <text>`` lines so far; ``follow``: until the job ends."""
        reader = self.reader()
        while True:
            finished = self.status.finished if follow else True
            yield from reader.lines(final=finished)
            if finished:
                return
            time.sleep(self.poll_seconds)

    def wait(
        self, timeout: float | None = None, logs: bool = False, raise_on_failure: bool = False
    ) -> JobStatus:
        deadline = None if timeout is None else time.monotonic() + timeout
        reader = self.reader()
        while True:
            status = self.status
            if logs:
                for line in reader.lines(final=status.finished):
                    print(line, flush=True)
            if status.finished or (deadline is not None and time.monotonic() >= deadline):
                break
            time.sleep(self.poll_seconds)
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self.failure_reason)
        return status

    def request_stop(self) -> bool:
        """Mark the stop and SIGTERM every step (a job still waiting to start is cancelled:
        nothing of it runs); False when the job had ended already."""
        status, described = self.state()
        if status.finished:
            return False
        self.head.touch(self.folder.stop_requested)
        if described is not None and described.state.startswith("PENDING"):
            self.cancel()
        else:
            slurm.signal_steps(self.head, self.slurm_job_id, "TERM")
        return True

    def end_within(self, seconds: float) -> bool:
        """Whether the job ends within ``seconds``."""
        deadline = time.monotonic() + seconds
        while not self.status.finished:
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(self.poll_seconds, 1.0))
        return True

    def cancel(self) -> None:
        """``scancel``: Slurm ends the job (SIGTERM, SIGKILL after the cluster's KillWait)."""
        slurm.cancel(self.head, self.slurm_job_id)

    def stop(self) -> None:
        """SIGTERM, then ``scancel`` when the job still runs after the grace period."""
        if self.request_stop() and not self.end_within(self.grace):
            print(f"{self.name}: still running {self.grace:g} s after SIGTERM: scancel",
                  file=sys.stderr, flush=True)  # fmt: skip
            self.cancel()
