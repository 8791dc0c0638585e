"""The SageMaker backend's functions: dry run, send, launch, attach (``smdist.backends.sagemaker``
re-exports them, loading this module on first use)."""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker import sending
from smdist.backends.sagemaker.dry_run_value import DryRun, Route
from smdist.backends.sagemaker.dry_run_value import (
    dry_run as value_of,
)  # the package's dry_run wraps it
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob, attach
from smdist.backends.sagemaker.v3.session import sdk_version  # no SDK import
from smdist.checks.catalog import unpinned_image
from smdist.errors import Problem
from smdist.planning.plan import Plan


def sdk_v3_installed() -> bool:
    """Whether the installed SageMaker Python SDK is 3.x: jobs then go out as v3 sends them."""
    return (sdk_version() or "").startswith("3.")


def submission_problems(plan: Plan) -> list[Problem]:
    """What ``submit`` would refuse for the installed SDK line, found with no AWS call and no
    SDK import: ``smdist validate`` and ``smdist plan`` report these too.

    A job only the local backends can run (``file://`` inputs, a local-mode instance type) is
    taken as meant for them: nothing is reported for it.
    """
    if request_.local_only_problems(plan.spec):
        return []
    problems = unpinned_image(plan.spec)
    if sdk_v3_installed():
        # lazy: v3's request modules load only where SDK v3 is the installed line
        from smdist.backends.sagemaker.v3.request import carriage_problems

        problems += carriage_problems(plan)
    else:
        # lazy: SDK v2's carriage check (no SDK import), where v2 is the installed line
        from smdist.backends.sagemaker.v2.carriage import carriage_problems as v2_problems

        problems += v2_problems(plan)
    if plan.spec.tuning is not None:
        # lazy: the tuning request's module, for a job with a search
        from smdist.backends.sagemaker.tuning.request import tuning_problems

        problems += tuning_problems(plan)
    return problems


def _route() -> Route:
    """How jobs go out under the installed SDK line (only that line's modules are imported)."""
    if sdk_v3_installed():
        # lazy: only the installed SDK line's modules are imported
        from smdist.backends.sagemaker.v3 import submit as v3_submit

        return v3_submit.ROUTE
    from smdist.backends.sagemaker import v2  # lazy: SDK v2's route under SDK v2 only

    return v2.ROUTE


def default_bucket(boto: Any) -> str:
    """The installed SDK line's default bucket for ``boto``'s account and region."""
    return _route().default_bucket(boto)


def launch(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> SageMakerJob:
    """Upload the code if it is new, create the training job, return it (not waiting):
    ``send(dry_run(plan, ...))`` with the account's role, bucket and region."""
    return sending.launch(
        plan,
        _route(),
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
    """The value ``launch`` sends, with no AWS call and no credentials needed: the plan bound
    as ``launch`` binds it, rendered by the installed SDK line, placeholders for what is not
    given (such a value is shown, never sent)."""
    return value_of(plan, _route(), bucket=bucket, role=role, region=region, job_name=job_name)


def send(
    shown: DryRun, boto_session: Any = None, *, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> SageMakerJob:
    """Send a dry run's value as it is: its code uploaded if new, its request created."""
    return sending.send(shown, boto_session, poll_seconds=poll_seconds)


def attach_job(
    name: str,
    *,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> SageMakerJob:
    """A job submitted earlier (by anyone), by name: ``smdist status|logs|stop NAME``."""
    return attach(name, sdk.boto_session(region, boto_session), poll_seconds=poll_seconds)


__all__ = [
    "DryRun",
    "SageMakerJob",
    "attach_job",
    "dry_run",
    "launch",
    "send",
    "submission_problems",
]
