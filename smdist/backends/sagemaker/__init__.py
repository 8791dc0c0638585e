"""Real SageMaker training jobs: as SDK v3 sends them when it is installed, else through v2.

With the SageMaker Python SDK 3.x installed (``smdist[sagemaker]``) ``launch`` and ``dry_run``
hand over to ``v3.submit``; with 2.x (``smdist[sagemaker-v2]``) to ``v2``. Both bind the plan
to the job (a ``Submission``) and render the request from it; ``dry_run(plan)`` shows that
request with no AWS call. The code ships once per distinct content (``upload``).

Options (``fit(..., backend="sagemaker", options={...})`` or ``launch(plan, **options)``):
``bucket`` (else ``SMDIST_BUCKET``, else the SDK's default bucket), ``role`` (else the spec's,
else ``SMDIST_ROLE``), ``region`` (else the spec's, else the AWS configuration),
``boto_session``, ``poll_seconds``.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.dry_run import DryRun
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob, attach
from smdist.errors import Problem
from smdist.planning.plan import Plan


def sdk_v3_installed() -> bool:
    """Whether the installed SageMaker Python SDK is 3.x: jobs then go out as v3 sends them."""
    from smdist.backends.sagemaker.v3.trainer import sdk_version

    return (sdk_version() or "").startswith("3.")


def submission_problems(plan: Plan) -> list[Problem]:
    """What ``submit`` would refuse for the installed SDK line, found with no AWS call and no
    SDK import: ``smdist validate`` and ``smdist plan`` report these too.

    A job only the local backends can run (``file://`` inputs, a local-mode instance type) is
    taken as meant for them: nothing is reported for it.
    """
    if request_.local_only_problems(plan.spec):
        return []
    from smdist.checks.catalog import unpinned_image

    problems = unpinned_image(plan.spec)
    if sdk_v3_installed():
        from smdist.backends.sagemaker.v3.request import carriage_problems

        problems += carriage_problems(plan)
    return problems


def _line() -> Any:
    """The module that submits under the installed SDK line."""
    if sdk_v3_installed():
        from smdist.backends.sagemaker.v3 import submit as v3_submit

        return v3_submit
    from smdist.backends.sagemaker import v2

    return v2


def default_bucket(boto: Any) -> str:
    """The installed SDK line's default bucket for ``boto``'s account and region."""
    return _line().default_bucket(boto)


def launch(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> SageMakerJob:
    """Upload the code if it is new, create the training job, return it (not waiting)."""
    return _line().launch(
        plan,
        bucket=bucket,
        role=role,
        region=region,
        boto_session=boto_session,
        poll_seconds=poll_seconds,
    )


def dry_run(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    job_name: str | None = None,
    **_ignored: Any,
) -> DryRun:
    """The request ``launch`` would send, with no AWS call and no credentials needed: the plan
    bound as ``launch`` binds it, rendered by the installed SDK line."""
    from smdist.backends.job_names import unique_job_name
    from smdist.backends.sagemaker.account import resolve_role
    from smdist.backends.sagemaker.dry_run import prepare_dry_run

    line = _line()
    shown = prepare_dry_run(plan, bucket=bucket, region=region)
    submission = plan.bind(
        job_name=job_name or unique_job_name(plan.spec.name),
        region=shown.region,
        bucket=shown.bucket,
        role=resolve_role(plan, role) or "<role>",
        code_uri=shown.code_uri,
    )
    return shown.result(line.dry_run_request(submission), line.caller(plan))


def attach_job(
    name: str,
    *,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> SageMakerJob:
    """A job submitted earlier (by anyone), by name: ``smdist status|logs|stop NAME``."""
    return attach(name, sdk.boto_session(region, boto_session), poll_seconds=poll_seconds)


__all__ = ["DryRun", "SageMakerJob", "attach_job", "dry_run", "launch", "submission_problems"]
