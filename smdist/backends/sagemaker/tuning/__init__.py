"""SageMaker hyperparameter tuning jobs (CreateHyperParameterTuningJob) from a job's ``tuning:``.

Made from the same plan and the same Submission as ``smdist submit``: the code is staged and
uploaded as submit stages it (``staging``: role, bucket, content-addressed upload), the
Submission is bound to the tuning job's name, and every trial's definition is submit's
CreateTrainingJob request moved into the tuning API's shape (``tuning.request``). The request
goes out with boto3, whichever SDK line is installed: trials start through the framework
image's training toolkit, the one route the tuning API can launch (no ``ContainerEntrypoint``).

- ``dry_run(plan)``: the request with no AWS call, placeholders where the account would say;
- ``launch(plan)``: upload the code if new, create the tuning job, return its ``TuningJob``;
- ``attach(name)``: a tuning job created earlier, by anyone.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker import default_bucket
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS
from smdist.backends.sagemaker.tuning import job as job_
from smdist.backends.sagemaker.tuning.job import TuningJob
from smdist.backends.sagemaker.tuning.names import send_under_fresh_tuning_names, tuning_job_name
from smdist.backends.sagemaker.tuning.request import render, require_tuning
from smdist.checks.tuning import tuning_name_prefix
from smdist.planning.plan import Plan

CALLER = "CreateHyperParameterTuningJob (boto3; trials run by the training toolkit)"
REQUEST_KEY = "CreateHyperParameterTuningJob"


def dry_run(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
) -> dict[str, Any]:
    """What ``launch`` would send, with no AWS call and no credentials: the code's place (from
    its digest, nothing uploaded), placeholders for the bucket and role as submit's dry run."""
    from smdist.backends.sagemaker.account import resolve_role
    from smdist.backends.sagemaker.dry_run import prepare_dry_run

    require_tuning(plan)
    shown = prepare_dry_run(plan, bucket=bucket, region=region)
    submission = plan.bind(
        job_name=tuning_job_name(tuning_name_prefix(plan.spec)),
        region=shown.region,
        bucket=shown.bucket,
        role=resolve_role(plan, role) or "<role>",
        code_uri=shown.code_uri,
    )
    shown_dict = shown.result({}, CALLER).to_dict()
    shown_dict.pop("CreateTrainingJob")
    shown_dict[REQUEST_KEY] = render(submission)
    return shown_dict


def launch(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> TuningJob:
    """Upload the code if it is new, create the tuning job, return it (not waiting)."""
    from smdist.backends.sagemaker.staging import stage

    require_tuning(plan)
    staged = stage(
        plan,
        bucket=bucket,
        role=role,
        region=region,
        boto_session=boto_session,
        default_bucket=default_bucket,
    )
    request_.training_image(plan, staged.boto.region_name)  # an unknown image fails first
    client = staged.boto.client("sagemaker")
    submission = send_under_fresh_tuning_names(
        tuning_name_prefix(plan.spec),
        staged.bind,
        lambda bound: client.create_hyper_parameter_tuning_job(**render(bound)),
    )
    return TuningJob(
        submission.job_name,
        staged.boto,
        plan=plan,
        submission=submission,
        poll_seconds=poll_seconds,
        source_uri=staged.upload.uri,
        uploaded_bytes=staged.upload.uploaded_bytes,
    )


def attach(
    name: str,
    region: str | None = None,
    *,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> TuningJob:
    """A tuning job created earlier (by anyone), by name: ``smdist status|logs|stop NAME``."""
    return job_.attach(name, sdk.boto_session(region, boto_session), poll_seconds=poll_seconds)


def find(
    name: str, region: str | None = None, *, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> TuningJob | None:
    """The tuning job ``name``, or None when the region has none of that name."""
    return job_.find(name, sdk.boto_session(region), poll_seconds=poll_seconds)


__all__ = ["TuningJob", "attach", "dry_run", "find", "launch"]
