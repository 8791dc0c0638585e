"""The Job protocol every backend implements, so a notebook or CI script never cares where a
job runs: status, logs, wait, stop, model artifacts, failure reason.

Statuses use SageMaker's names (DescribeTrainingJob's TrainingJobStatus) everywhere.
"""

from __future__ import annotations

import enum
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from smdist.errors import NO_SUCH_JOB, OPTION, Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.options import BackendOptions
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


class Backend(ABC):
    """A place a job runs (TorchX's scheduler shape): the one interface the command line,
    ``smdist.fit`` and ``smdist.tune`` know. A backend is added by a package with a subclass
    and one line in ``smdist.backends.registry``.

    ``dry_run(plan, options)`` is the exact value the backend would send, with nothing sent
    or started; ``send(value, options)`` hands that same value over; ``launch`` is the two in
    a row. ``attach(name, options)`` finds a job this backend ran (None: none of that name
    here), ``list(options)`` the jobs it keeps a record of.
    """

    name: ClassVar[str]
    summary: ClassVar[str]  # one line for --help
    Options: ClassVar[type[BackendOptions]]
    TuneOptions: ClassVar[type[BackendOptions] | None] = None  # a search's, where they differ
    # "run": the calling process supervises the job to its end (``smdist run``); "submit":
    # the job runs on without it (``smdist submit``, ``--wait`` to follow it).
    command: ClassVar[str] = "submit"
    # Whether ``attach`` looks only on this machine (a record under ``--root``): such
    # backends are asked first for a name, remote ones after.
    finds_jobs_here: ClassVar[bool] = True
    # The backend in a user's words, and what a lookup on a remote one needs: (to look at all,
    # to be let in), said when a name is found nowhere.
    title: ClassVar[str] = ""
    lookup_needs: ClassVar[tuple[str, str]] = ("", "")
    # Whether a ``file://`` channel names a folder of this machine (checked to exist before
    # anything runs) or one of the cluster's shared file system, seen only there.
    file_inputs_here: ClassVar[bool] = True

    def options(self, given: Mapping[str, Any] | None = None, **naming: Any) -> Any:
        """``given`` validated against ``Options``: SpecError (exit 2) for any problem."""
        return self.Options.read(self.name, dict(given or {}), **naming)

    def tune_options_model(self) -> type[BackendOptions]:
        return self.TuneOptions or self.Options

    def tune_options(self, given: Mapping[str, Any] | None = None) -> Any:
        return self.tune_options_model().read(self.name, dict(given or {}))

    def tune_notes(self, plan: Plan) -> list[str]:
        """Lines to show before a search starts (what it may cost, what differs here)."""
        return []

    def tune_dry_run(self, plan: Plan, options: Any) -> Any:
        """The search's request as ``tune`` would send it; nothing is sent."""
        raise SpecError(
            [Problem("--dry-run", "shows a request; this backend sends none", self.name)], OPTION
        )

    @abstractmethod
    def dry_run(self, plan: Plan, options: Any) -> Any:
        """The value ``send`` would hand over, printable; nothing is sent or started."""

    @abstractmethod
    def send(self, value: Any, options: Any) -> Job:
        """Hand ``dry_run``'s value over as it is; returns the job, not waiting for it."""

    def launch(self, plan: Plan, options: Any) -> Job:
        return self.send(self.dry_run(plan, options), options)

    def submission_problems(self, plan: Plan) -> list[Problem]:
        """What ``send`` would refuse, found with no service call (``validate`` and ``plan``
        report them too)."""
        return []

    def rendering(self, plan: Plan) -> Any:
        """What ``smdist plan`` shows this backend would be given (``to_dict()``)."""
        raise NotImplementedError(f"the {self.name} backend shows no plan rendering")

    def host_line(self, plan: Plan) -> Any:
        """What ``smdist plan --hosts`` shows each host starts with."""
        raise NotImplementedError(f"the {self.name} backend shows no host commands")

    def notes(self, plan: Plan) -> list[str]:
        """Lines to show before a dry run or a launch (what the job will cost)."""
        return []

    def show(self, plan: Plan, value: Any) -> tuple[str, list[str]]:
        """A dry run's value as printed: the value itself (stdout), and notes (stderr)."""
        return json.dumps(value.to_dict(), indent=2, default=str), []

    def launched(self, job: Any) -> list[str]:
        """Lines to show once the job has started (what was uploaded, how to follow it)."""
        return []

    def announce(self, plan: Plan) -> list[str]:
        """Lines to show before ``launch`` (what is uploaded or copied), so a mistake can be
        stopped."""
        return []

    def attach(self, name: str, options: Any) -> Any:
        """The job (or search) ``name`` this backend ran, or None when it has none of that name
        here; a remote backend raises SpecError (no such job) or its service's error."""
        return None

    def known_names(self, options: Any) -> list[str]:
        """Names of this backend's jobs kept here, for "did you mean" (none for a remote one)."""
        return []

    def not_found(self, name: str, options: Any) -> SpecError:
        """The error for ``name`` when ``--backend`` named this backend and it has no such job."""
        return SpecError(
            [Problem("job_name", f"is no job of the {self.name} backend", name)], NO_SUCH_JOB
        )

    def where(self, record: dict[str, Any], job_dir: Any) -> str:
        """Where a job this backend recorded on this machine ran, in ``status``'s words."""
        return f"{self.name} in {job_dir}"

    def unreachable(self, options: Any) -> str | None:
        """Why ``attach`` cannot look at all from here (no region configured), or None."""
        return None

    def list(self, options: Any) -> list[Any]:
        """The jobs this backend keeps a record of, newest first."""
        return []

    def tune(self, plan: Plan, options: Any, progress: Any = None, wait: bool = True) -> Any:
        """Run the spec's ``tuning:`` search (``progress(line)`` as trials end; ``wait``: until
        it ends); SpecError where this backend runs none."""
        raise SpecError([Problem("backend", "runs no hyperparameter search", self.name)], OPTION)

    @property
    def tunes(self) -> bool:
        """Whether this backend runs a hyperparameter search (overrides ``tune``)."""
        return type(self).tune is not Backend.tune
