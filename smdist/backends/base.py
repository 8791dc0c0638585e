"""The Job protocol every backend implements, so a notebook or CI script never cares where a
job runs: status, logs, wait, stop, model artifacts, failure reason.

Statuses use SageMaker's names (DescribeTrainingJob's TrainingJobStatus) everywhere.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from smdist.planning.plan import Plan


class JobStatus(str, enum.Enum):
    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.STOPPED)

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for a job that ended with this status (0 completed, else 1)."""
        return 0 if self is JobStatus.COMPLETED else 1

    def __str__(self) -> str:
        return self.value


class JobError(RuntimeError):
    """A job that failed or was stopped, raised by ``wait(raise_on_failure=True)``."""

    def __init__(self, job_name: str, status: JobStatus, reason: str | None) -> None:
        self.job_name, self.status, self.reason = job_name, status, reason
        super().__init__(f"job {job_name} {status.value.lower()}: {reason or 'no reason given'}")


@runtime_checkable
class Job(Protocol):
    """A running or finished training job on any backend."""

    name: str
    backend: str
    plan: Plan | None

    @property
    def status(self) -> JobStatus: ...

    def logs(self, follow: bool = False) -> Iterator[str]:
        """Log lines so far (``follow``: keep yielding until the job ends)."""
        ...

    def wait(
        self, timeout: float | None = None, logs: bool = False, raise_on_failure: bool = False
    ) -> JobStatus:
        """Block until the job ends (or ``timeout`` seconds pass); return its status."""
        ...

    def stop(self) -> None:
        """Stop the job as SageMaker does: SIGTERM, then SIGKILL after a grace period."""
        ...

    @property
    def model_artifacts(self) -> str | None:
        """URI of model.tar.gz once the job completed (s3:// or file://)."""
        ...

    @property
    def failure_reason(self) -> str | None: ...
