"""What ``smdist status``, ``logs`` and ``stop`` show of a job any backend found: a ``JobView``.

A backend's ``attach`` returns one for a training job, or for a search (a tuning job, a local
study), so the command line prints, follows and stops jobs without knowing where they run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from smdist.backends.base import JobStatus
from smdist.errors import OPTION, Problem, SpecError

Say = Callable[[str], None]
ReportEnd = Callable[[Any, Any], None]


class JobView(ABC):
    """One job or search as the command line shows it."""

    name: str

    @abstractmethod
    def status_lines(self) -> list[str]:
        """``NAME<TAB>STATUS<TAB>where``, then its reason, model or best trial."""

    @abstractmethod
    def status_document(self) -> dict[str, Any]:
        """``status --json``: the record or description, as the backend keeps it."""

    @property
    @abstractmethod
    def exit_code(self) -> int:
        """1 when it failed or was stopped, else 0 (read anew each time)."""

    @abstractmethod
    def logs(self, follow: bool) -> Iterator[str]:
        """Its log lines so far, each prefixed with its host; ``follow``: until it ends."""

    @abstractmethod
    def stop(self, say: Say, *, wait: bool, poll: float, report_end: ReportEnd) -> None:
        """Ask for a stop (saying so); with ``wait``, until it has ended."""

    def trial(self, wanted: str | None, say: Say) -> JobView:
        """The job whose logs ``logs --job`` shows: a search's trial; a job is its own."""
        if wanted is not None:
            raise SpecError(
                [Problem("--job", "applies to tuning jobs; this is a training job", self.name)],
                OPTION,
            )
        return self


class BackendJobView(JobView):
    """A view of a backend's ``Job`` object (``smdist.backends.base.Job``): its exit code and
    its logs are the job's own."""

    job: Any

    @property
    def exit_code(self) -> int:
        return 1 if self.job.status in (JobStatus.FAILED, JobStatus.STOPPED) else 0

    def logs(self, follow: bool) -> Iterator[str]:
        return self.job.logs(follow)
