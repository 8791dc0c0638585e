"""Sending a dry-run value, and ``launch`` as ``send(dry_run(...))``.

Every route's ``send`` starts the same way: it refuses a value that still holds placeholders,
opens a boto3 session in the value's region, and puts the code where the value says (content-
addressed: one HeadObject, an upload only when new). Then it sends the value's request, and
only that, renamed when SageMaker says the name is taken (``DryRun.renamed``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smdist.backends.job_names import send_under_fresh_names
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.account import resolve_account
from smdist.backends.sagemaker.dry_run_value import DryRun, Route, dry_run, pack
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS
from smdist.backends.sagemaker.upload import SourceUpload, upload_source
from smdist.errors import Problem, SpecError
from smdist.planning.plan import Plan

_HOW_TO_GIVE = {
    "role": "a role ARN (role: in the job file, --role, role=, SMDIST_ROLE)",
    "bucket": "an existing bucket (--bucket, bucket=, SMDIST_BUCKET), or launch() for the "
    "SDK's default bucket",
    "region": "a region (region: in the job file, --region, region=, AWS_REGION)",
}


def session_for(shown: DryRun, boto_session: Any = None) -> Any:
    """A boto3 session in ``shown``'s region; SpecError when ``shown`` holds a placeholder."""
    if shown.placeholders:
        raise SpecError(
            [
                Problem(name, "is a dry run's placeholder: it cannot be sent", None, why)
                for name, why in _HOW_TO_GIVE.items()
                if name in shown.placeholders
            ]
        )
    return sdk.boto_session(shown.submission.region, boto_session)


def upload_code(boto: Any, shown: DryRun) -> SourceUpload:
    """``shown``'s code at its ``source_uri`` (uploaded only when new)."""
    submission = shown.submission
    kms = submission.estimator_kwargs.get("output_kms_key")
    upload = upload_source(boto, submission.bucket or "", shown.code.entries, kms)
    if upload.uri != shown.source_uri:  # both from the bucket and the digest: a bug in smdist
        raise AssertionError(f"code uploaded to {upload.uri}, the request says {shown.source_uri}")
    return upload


def send_under_its_name(
    shown: DryRun, send: Callable[[DryRun], None], fresh_name: Callable[[], str]
) -> DryRun:
    """``send(shown)``; while SageMaker says the name is taken, ``shown`` renamed to a fresh
    name and sent again. Returns the value that was sent."""
    names = iter([shown.job_name])

    def name(_prefix: str) -> str:
        return next(names, None) or fresh_name()

    def bind(job_name: str) -> DryRun:
        return shown if job_name == shown.job_name else shown.renamed(job_name)

    return send_under_fresh_names("", bind, send, fresh_name=name)


def job_arguments(sent: DryRun, upload: SourceUpload, poll_seconds: float) -> dict[str, Any]:
    """What every route's job is made with besides its name and session: the value that was
    sent (its plan and submission) and the code's upload."""
    return {
        "plan": sent.plan,
        "submission": sent.submission,
        "poll_seconds": poll_seconds,
        "source_uri": upload.uri,
        "uploaded_bytes": upload.uploaded_bytes,
    }


def send(
    shown: DryRun, boto_session: Any = None, *, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> Any:
    """Upload ``shown``'s code if new and send its request by its route; the job, not waiting."""
    return shown.route.send(shown, boto_session, poll_seconds=poll_seconds)


def launch(
    plan: Plan,
    route: Route,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> Any:
    """``send(dry_run(plan))`` with the account's values: bad input fails before any AWS call
    (``pack``), then the role, bucket and region are resolved, and the value made from them
    is sent as it is."""
    code = pack(plan, route)
    account = resolve_account(
        plan,
        bucket=bucket,
        role=role,
        region=region,
        boto_session=boto_session,
        default_bucket=route.default_bucket,
    )
    shown = dry_run(
        plan, route, bucket=account.bucket, role=account.role, region=account.region, code=code
    )
    return route.send(shown, account.boto, poll_seconds=poll_seconds)


__all__ = ["launch", "send", "send_under_its_name", "session_for", "upload_code"]
