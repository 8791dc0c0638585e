"""Real SageMaker training jobs: as SDK v3 sends them when it is installed, else through v2.

With the SageMaker Python SDK 3.x installed (``smdist[sagemaker]``) ``launch`` and ``dry_run``
hand over to ``v3_submit``. With 2.x (``smdist[sagemaker-v2]``) the job goes through
the estimators, as below.

``launch(plan)`` ships the code once per distinct content: the bundle's content digest names
the S3 object (``s3://<bucket>/smdist/source/<digest>/sourcedir.tar.gz``), a HeadObject finds
it already there, and only new code is packed and uploaded. The estimator is handed that S3
tarball, so the SDK uploads nothing itself. ``dry_run(plan)`` shows the CreateTrainingJob
request that would be sent, with no AWS call.

Options (``fit(..., backend="sagemaker", options={...})`` or ``launch(plan, **options)``):
``bucket`` (else ``SMDIST_BUCKET``, else the SDK's default bucket), ``role`` (else the spec's,
else ``SMDIST_ROLE``), ``region`` (else the spec's, else the AWS configuration),
``boto_session``, ``poll_seconds``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smdist import packaging
from smdist.backends.job_names import send_under_fresh_names, unique_job_name
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.buckets import require_bucket
from smdist.backends.sagemaker.dry_run import BUCKET_VARIABLE, DryRun, prepare_dry_run
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob, attach
from smdist.errors import Problem, SpecError
from smdist.planning import Plan
from smdist.submission import Submission

ROLE_VARIABLE = "SMDIST_ROLE"


@dataclass(frozen=True)
class SourceUpload:
    """The code's place in S3 and what it cost to put it there."""

    uri: str
    digest: str
    uploaded_bytes: int  # 0 when the same content was already there
    files: list[str] = field(default_factory=list)


# ---- resolution of the account-specific parts --------------------------------------------------
def resolve_role(plan: Plan, role: str | None) -> str | None:
    return plan.spec.role or role or os.environ.get(ROLE_VARIABLE) or None


def require_role(plan: Plan, role: str | None) -> str:
    resolved = resolve_role(plan, role)
    if resolved:
        return resolved
    try:  # inside SageMaker notebooks and Studio the execution role is known
        sdk.import_sagemaker()
        from sagemaker import get_execution_role

        with sdk.contained():
            return get_execution_role()
    except Exception:  # noqa: BLE001 - any failure means: not in a SageMaker notebook
        raise SpecError(
            [
                Problem(
                    "role",
                    "no IAM role for the job: set `role:` in the job file, pass --role, or "
                    f"export {ROLE_VARIABLE}",
                    valid="arn:aws:iam::<account>:role/<SageMaker execution role>",
                )
            ]
        ) from None


def sdk_v3_installed() -> bool:
    """Whether the installed SageMaker Python SDK is 3.x: jobs then go out as v3 sends them."""
    from smdist.backends.sagemaker.v3 import sdk_version

    return (sdk_version() or "").startswith("3.")


def submission_problems(plan: Plan) -> list[Problem]:
    """What ``submit`` would refuse for the installed SDK line, found with no AWS call and no
    SDK import: ``smdist validate`` and ``smdist plan`` report these too.

    A job only the local backends can run (``file://`` inputs, a local-mode instance type) is
    taken as meant for them: nothing is reported for it.
    """
    if request_.local_only_problems(plan.spec):
        return []
    from smdist.catalog_checks import unpinned_image

    problems = unpinned_image(plan.spec)
    if sdk_v3_installed():
        from smdist.backends.sagemaker.v3_request import carriage_problems

        problems += carriage_problems(plan)
    return problems


def _output_kms_key(plan: Plan) -> str | None:
    return plan.estimator_kwargs.get("output_kms_key")


# ---- code upload ----------------------------------------------------------------------------
def upload_source(
    boto_session: Any,
    bucket: str,
    entries: list[tuple[Path, str]],
    kms_key: str | None = None,
) -> SourceUpload:
    """Put the bundle at its content-addressed key unless an object is already there."""
    from botocore.exceptions import ClientError

    digest = packaging.content_digest(entries)
    uri = request_.source_uri(bucket, digest)
    key = uri[len(f"s3://{bucket}/") :]
    files = [arcname for _, arcname in entries]
    s3 = boto_session.client("s3")
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return SourceUpload(uri, digest, 0, files)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
            raise
    extra: dict[str, Any] = {
        "ContentType": "application/gzip",
        "Metadata": {"smdist-digest": digest},
    }
    if kms_key:
        extra.update(ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key)
    with tempfile.TemporaryDirectory(prefix="smdist-pack-") as tmp:
        tarball = Path(tmp) / request_.TARBALL
        packaging.write_tarball(entries, tarball)
        size = tarball.stat().st_size
        s3.upload_file(str(tarball), bucket, key, ExtraArgs=extra)
    return SourceUpload(uri, digest, size, files)


# ---- the estimator ------------------------------------------------------------------------------
def estimator_kwargs(submission: Submission) -> dict[str, Any]:
    """The job's estimator arguments with the code already in S3 and the backend's own."""
    kwargs = dict(submission.estimator_kwargs)
    kwargs["source_dir"] = submission.code_uri
    if "image_uri" not in kwargs:  # smdist's catalogue names the image, not the SDK's tables
        from smdist.image_choice import chosen_image

        plan_ = submission.plan
        kwargs["image_uri"] = request_.training_image(plan_, submission.region)
        image = chosen_image(plan_.spec)
        if image is not None:  # the estimator still validates the distribution by version
            kwargs["framework_version"] = kwargs.get("framework_version") or image.version
            kwargs["py_version"] = kwargs.get("py_version") or image.py_versions[-1]
    kwargs.update(request_.BACKEND_ESTIMATOR_KWARGS)
    return kwargs


def training_inputs(plan: Plan) -> dict[str, Any] | None:
    if not plan.spec.inputs:
        return None
    from sagemaker.inputs import TrainingInput

    return {
        name: TrainingInput(
            channel.uri, distribution=channel.distribution, input_mode=channel.input_mode
        )
        for name, channel in plan.spec.inputs.items()
    }


def launch(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> SageMakerJob:
    """Upload the code if it is new, create the training job, return it (not waiting).

    With SDK v3 installed the job is v3's (``v3_submit``); with v2, an estimator's.
    """
    if sdk_v3_installed():
        from smdist.backends.sagemaker import v3_submit as sagemaker_v3_submit

        return sagemaker_v3_submit.launch(
            plan,
            bucket=bucket,
            role=role,
            region=region,
            boto_session=boto_session,
            poll_seconds=poll_seconds,
        )
    spec = plan.spec
    request_.check_cloud_spec(spec)
    entries = packaging.bundle(plan)  # bad source_dir / entry point fails before any AWS call
    boto = sdk.boto_session(region or spec.region, boto_session)
    job_role = require_role(plan, role)
    named = bucket or os.environ.get(BUCKET_VARIABLE)
    if named:
        require_bucket(boto, named, "--bucket" if bucket else BUCKET_VARIABLE)
    session = sdk.sagemaker_session(boto, named)
    with sdk.contained():
        job_bucket = named or session.default_bucket()  # only the SDK's default is created
    upload = upload_source(boto, job_bucket, entries, _output_kms_key(plan))
    estimator_class = sdk.estimator_class(plan.estimator)

    def send(submission: Submission) -> None:
        with sdk.contained():
            estimator = estimator_class(sagemaker_session=session, **estimator_kwargs(submission))
            estimator.fit(
                training_inputs(plan), job_name=submission.job_name, wait=False, logs=False
            )

    submission = send_under_fresh_names(
        spec.name,
        lambda name: plan.bind(
            job_name=name,
            region=boto.region_name,
            bucket=job_bucket,
            role=job_role,
            code_uri=upload.uri,
        ),
        send,
    )
    return SageMakerJob(
        submission.job_name,
        boto,
        plan=plan,
        submission=submission,
        poll_seconds=poll_seconds,
        source_uri=upload.uri,
        uploaded_bytes=upload.uploaded_bytes,
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
    """The request ``launch`` would send, with no AWS call and no credentials needed."""
    if sdk_v3_installed():
        from smdist.backends.sagemaker import v3_submit as sagemaker_v3_submit

        return sagemaker_v3_submit.dry_run(
            plan, bucket=bucket, role=role, region=region, job_name=job_name
        )
    shown = prepare_dry_run(plan, bucket=bucket, region=region)
    submission = plan.bind(
        job_name=job_name or unique_job_name(plan.spec.name),
        region=shown.region,
        bucket=shown.bucket,
        role=resolve_role(plan, role) or "<role>",
        code_uri=shown.code_uri,
    )
    image = request_.training_image(plan, shown.region)
    request = request_.create_training_job_request(submission, image=image)
    return shown.result(request, plan.estimator)


def attach_job(
    name: str,
    *,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> SageMakerJob:
    """A job submitted earlier (by anyone), by name: ``smdist status|logs|stop NAME``."""
    return attach(name, sdk.boto_session(region, boto_session), poll_seconds=poll_seconds)


__all__ = ["DryRun", "SageMakerJob", "SourceUpload", "attach_job", "dry_run", "launch"]
