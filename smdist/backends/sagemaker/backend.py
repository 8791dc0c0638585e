"""The SageMaker backend on the backend interface: real training jobs and tuning jobs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from smdist.backends.base import Backend
from smdist.backends.sagemaker.options import SageMakerOptions
from smdist.errors import NO_SUCH_JOB, Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.sagemaker.dry_run_value import DryRun
    from smdist.planning.plan import Plan


def _service() -> Any:
    """The backend's functions (the SDK line's request modules), loaded on first use: the
    command line reads this module for every ``--help``."""
    # lazy: see the docstring
    from smdist.backends.sagemaker import service

    return service


class SageMakerBackend(Backend):
    name = "sagemaker"
    summary = "SageMaker training jobs, sent as the installed SDK line sends them"
    Options = SageMakerOptions
    finds_jobs_here = False
    title = "SageMaker"
    lookup_needs = (
        "a region (--region, AWS_REGION or `aws configure`)",
        "AWS credentials (`aws configure`, AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY)",
    )

    def dry_run(self, plan: Plan, options: SageMakerOptions) -> DryRun:
        return _service().dry_run(
            plan, bucket=options.bucket, role=options.role, region=options.region
        )

    def send(self, value: DryRun, options: SageMakerOptions) -> Any:
        return _service().send(value, options.boto_session, poll_seconds=options.poll_seconds)

    def launch(self, plan: Plan, options: SageMakerOptions) -> Any:
        # the account's role, bucket and region are resolved first
        return _service().launch(plan, **options.given())

    def submission_problems(self, plan: Plan) -> list[Problem]:
        # lazy: the installed SDK line's checks (no SDK import)
        from smdist.backends.sagemaker.service import submission_problems

        return submission_problems(plan)

    def rendering(self, plan: Plan) -> Any:
        # lazy: the SDK line's rendering (pydantic models), for plan only
        from smdist.backends.sagemaker.rendering import sdk_rendering

        return sdk_rendering(plan)

    def host_line(self, plan: Plan) -> Any:
        # lazy: as in rendering
        from smdist.backends.sagemaker.rendering import host_line

        return host_line(plan)

    def notes(self, plan: Plan) -> list[str]:
        # lazy: the cost line's prices, for a submit only
        from smdist.planning.cost_text import job_cost_line

        return [job_cost_line(plan)]

    def announce(self, plan: Plan) -> list[str]:
        # lazy: packaging, for a launch only
        from smdist.packaging.bundle import upload_notice

        return list(upload_notice(plan))

    def show(self, plan: Plan, value: DryRun) -> tuple[str, list[str]]:
        """The request as JSON (stdout); its notes and what ships (stderr)."""
        # lazy: packaging, for a dry run only
        from smdist.packaging.bundle import dry_run_lines

        notes = [f"note: {note}" for note in value.warnings[len(plan.warnings) :]]
        return json.dumps(value.to_dict(), indent=2, default=str), notes + dry_run_lines(plan)

    def launched(self, job: Any) -> list[str]:
        """What a launch uploaded (or found there already)."""
        lines = []
        for what, prefix in (("code", "source"), ("drivers", "drivers")):
            uri = getattr(job, f"{prefix}_uri", None)
            count = getattr(job, f"{'' if what == 'code' else 'drivers_'}uploaded_bytes", None)
            if uri is not None and count is not None:
                done = f"uploaded {count} bytes" if count else "unchanged, not uploaded again"
                lines.append(f"{what}: {done} ({uri})")
        return lines

    def attach(self, name: str, options: SageMakerOptions) -> Any:
        """The training job ``name``, else the tuning job of that name; SpecError for neither."""
        # lazy: the SageMaker backend's job handles, for a SageMaker job only
        from smdist.backends.sagemaker import attach_job, tuning

        # lazy: as above
        from smdist.backends.sagemaker.views import TrainingJobView, TuningJobView

        found = dict(region=options.region, poll_seconds=options.poll_seconds)
        try:
            return TrainingJobView(attach_job(name, boto_session=options.boto_session, **found))
        except SpecError as missing:
            if missing.header != NO_SUCH_JOB:
                raise
        tuning_job = tuning.find(name, options.region, poll_seconds=options.poll_seconds)
        if tuning_job is None:
            raise SpecError(
                [
                    Problem(
                        "job",
                        "no SageMaker training job or tuning job has this name in this region",
                        name,
                        "a name from `aws sagemaker list-training-jobs` or "
                        "`list-hyper-parameter-tuning-jobs`",
                    )
                ],
                NO_SUCH_JOB,
            ) from None
        return TuningJobView(tuning_job)

    def list(self, options: SageMakerOptions) -> list[Any]:
        """The region's training jobs, newest first (ListTrainingJobs' first page)."""
        # lazy: boto3, for `smdist jobs --backend sagemaker` only
        from smdist.backends.sagemaker.listing import training_job_rows

        return training_job_rows(_service().sdk.boto_session(options.region, options.boto_session))

    def unreachable(self, options: SageMakerOptions) -> str | None:
        # lazy: the AWS configuration, for a name found nowhere here
        from smdist.backends.aws_region import configured_region

        if options.region or configured_region():
            return None
        return "no AWS region is configured to look on SageMaker"

    def tune_notes(self, plan: Plan) -> list[str]:
        # lazy: the cost line's prices, for a search only
        from smdist.planning.cost_text import search_cost_line

        return [search_cost_line(plan, plan.spec.tuning)]

    def tune_dry_run(self, plan: Plan, options: SageMakerOptions) -> DryRun:
        # lazy: SageMaker's tuning jobs, for a search only
        from smdist.backends.sagemaker import tuning

        return tuning.dry_run(plan, bucket=options.bucket, role=options.role, region=options.region)

    def tune(
        self, plan: Plan, options: SageMakerOptions, progress: Any = None, wait: bool = True
    ) -> Any:
        """Create the tuning job; with ``wait``, follow it to its end."""
        # lazy: SageMaker's tuning jobs, for a search only
        from smdist.backends.sagemaker import tuning

        job = tuning.launch(plan, **options.given())
        if wait:
            job.wait(echo=progress or (lambda line: None))
        return job
