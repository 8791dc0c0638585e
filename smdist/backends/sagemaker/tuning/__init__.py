"""SageMaker hyperparameter tuning jobs (CreateHyperParameterTuningJob) from a job's ``tuning:``.

Made from the same plan and the same Submission as ``smdist submit``, and sent the same way
(``ROUTE``): ``dry_run(plan)`` is the value (the Submission bound to the tuning job's name,
every trial's definition submit's CreateTrainingJob request moved into the tuning API's shape,
``tuning.request``; the code submit would ship), and ``send`` hands it over: the code uploaded
if new, the request sent with boto3, whichever SDK line is installed. Trials start through the
framework image's training toolkit, the one route the tuning API can launch (no
``ContainerEntrypoint``).

- ``dry_run(plan)``: the value, with no AWS call, placeholders where the account would say;
- ``launch(plan)``: ``send(dry_run(plan))`` with the account's values; returns its ``TuningJob``;
- ``attach(name)``: a tuning job created earlier, by anyone.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker import default_bucket, sending
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.dry_run_value import DryRun, Route
from smdist.backends.sagemaker.dry_run_value import (
    dry_run as value_of,
)  # the package's dry_run wraps it
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS
from smdist.backends.sagemaker.tuning import job as job_
from smdist.backends.sagemaker.tuning.job import TuningJob
from smdist.backends.sagemaker.tuning.names import tuning_job_name
from smdist.backends.sagemaker.tuning.request import check, render
from smdist.checks.tuning import tuning_name_prefix
from smdist.planning.plan import Plan

CALLER = "CreateHyperParameterTuningJob (boto3; trials run by the training toolkit)"
REQUEST_KEY = "CreateHyperParameterTuningJob"


def fresh_name(plan: Plan) -> str:
    """A new tuning job's name: at most 32 characters (``tuning.names``)."""
    return tuning_job_name(tuning_name_prefix(plan.spec))


def send(
    shown: DryRun, boto_session: Any = None, *, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> TuningJob:
    """Upload ``shown``'s code if new, send its request, return the tuning job (not waiting)."""
    boto = sending.session_for(shown, boto_session)
    upload = sending.upload_code(boto, shown)
    client = boto.client("sagemaker")
    sent = sending.send_under_its_name(
        shown,
        lambda value: client.create_hyper_parameter_tuning_job(**value.request),
        lambda: fresh_name(shown.plan),
    )
    return TuningJob(sent.job_name, boto, **sending.job_arguments(sent, upload, poll_seconds))


ROUTE = Route(
    name="tuning",
    request_key=REQUEST_KEY,
    check=check,
    render=render,
    caller=lambda plan: CALLER,
    fresh_name=fresh_name,
    default_bucket=default_bucket,
    send=send,
)


def dry_run(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
) -> DryRun:
    """The value ``launch`` sends, with no AWS call and no credentials: the code's place (from
    its digest, nothing uploaded), placeholders for the bucket and role as submit's dry run."""
    return value_of(plan, ROUTE, bucket=bucket, role=role, region=region)


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
    return sending.launch(
        plan,
        ROUTE,
        bucket=bucket,
        role=role,
        region=region,
        boto_session=boto_session,
        poll_seconds=poll_seconds,
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


__all__ = ["ROUTE", "TuningJob", "attach", "dry_run", "find", "launch", "send"]
