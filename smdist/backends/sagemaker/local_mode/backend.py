"""SageMaker local mode on the backend interface: the SDK's own containers, under Docker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smdist.backends.base import Backend
from smdist.backends.recorded import RecordedHere
from smdist.backends.sagemaker.backend import SageMakerBackend
from smdist.backends.sagemaker.options import LocalModeOptions
from smdist.errors import Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.sagemaker.dry_run_value import DryRun
    from smdist.planning.plan import Plan


class LocalModeBackend(RecordedHere, SageMakerBackend):
    """Shows the request SageMaker would get (as ``sagemaker`` does); runs it in containers
    here, supervised by a process of its own, so the job outlives ``smdist submit``."""

    name = "sagemaker-local"
    summary = "SageMaker's training containers on this machine (the SDK's local mode, Docker)"
    Options = LocalModeOptions
    finds_jobs_here = True

    def submission_problems(self, plan: Plan) -> list[Problem]:
        # lazy: local mode's checks module reads the SDK's metadata, for this backend only
        from smdist.backends.sagemaker.local_mode.checks import refused_settings

        return refused_settings(plan.spec) + super().submission_problems(plan)

    def dry_run(self, plan: Plan, options: Any) -> DryRun:
        # lazy: the SDK line's request modules, for a dry run only
        from smdist.backends.sagemaker import service

        if refused := self.submission_problems(plan):
            raise SpecError(refused)

        return service.dry_run(
            plan, bucket=options.bucket, role=options.role, region=options.region
        )

    def send(self, value: DryRun, options: LocalModeOptions) -> Any:
        return self.launch(value.plan, options)

    def launch(self, plan: Plan, options: LocalModeOptions) -> Any:
        # lazy: Docker's checks and the supervisor, when a job starts
        from smdist.backends.sagemaker.local_mode import starting as local_mode

        if refused := self.submission_problems(plan):
            raise SpecError(refused)

        return local_mode.launch(plan, **options.given())

    def notes(self, plan: Plan) -> list[str]:
        return []  # it runs on this machine: no instance is paid for

    def launched(self, job: Any) -> list[str]:
        return [
            f"{job.name}: running in SageMaker local mode on this machine; follow it with "
            f"`smdist logs -f {job.name}`, stop it with `smdist stop {job.name}`"
        ]

    def where(self, record: dict[str, Any], job_dir: Any) -> str:
        return (
            f"sagemaker-local (SDK v{record.get('sdk')}): {record.get('instance_count')} "
            f"{record.get('instance_type')} container(s) in {job_dir}"
        )

    def unreachable(self, options: Any) -> str | None:
        return None

    tune = Backend.tune  # runs no search: the refusal every backend without one gives
