"""Real SageMaker training jobs, as SDK v3's ``ModelTrainer`` would submit them.

The ``sagemaker`` backend comes here when the installed SageMaker Python SDK is 3.x. The request
is v3's, field for field (``v3_request``; ``tests/aws_v3`` compares it with what
``ModelTrainer.train()`` sends), and so are the two channels the container reads: the code, and
the drivers v3 would upload (``v3_drivers.write_drivers``). What differs is the cost:
both channels live under content-addressed S3 keys (``smdist/source/<digest>/sourcedir.tar.gz``,
``smdist/drivers/<digest>/``), found by one HeadObject each and uploaded only when new, where
``train()`` uploads both again for every job, creates its bucket in a dry run, and names jobs by
the second. The request goes out with boto3's CreateTrainingJob, the call v3 itself makes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from smdist.backends.job_names import send_under_fresh_names
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob
from smdist.backends.sagemaker.staging import stage
from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission

ESTIMATOR = "ModelTrainer (SageMaker Python SDK v3)"
_LAST_DRIVER_FILE = "sm_train.sh"  # uploaded last: its presence means the prefix is complete


def _missing(s3: Any, bucket: str, key: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        s3.head_object(Bucket=bucket, Key=key)
        return False
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
            raise
        return True


def upload_drivers(
    boto_session: Any,
    plan: Plan,
    bucket: str,
    code_uri: str,
    kms_key: str | None = None,
    files: list[str] | None = None,
) -> tuple[str, int]:
    """The drivers' S3 prefix for this job, and the bytes uploaded (0 when already there);
    ``files``: the code's file list (default: the bundle's)."""
    digest = v3_request.drivers_digest(plan, v3.sdk_version() or "", code_uri)
    uri = v3_request.drivers_uri(bucket, digest)
    prefix = uri[len(f"s3://{bucket}/") :]
    s3 = boto_session.client("s3")
    if not _missing(s3, bucket, f"{prefix}/{_LAST_DRIVER_FILE}"):
        return uri, 0
    extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key} if kms_key else None
    uploaded = 0
    with tempfile.TemporaryDirectory(prefix="smdist-drivers-") as tmp:
        root = Path(tmp)
        from smdist.backends.sagemaker.v3.drivers import write_drivers

        write_drivers(plan, code_uri, root, files)
        files = sorted(p for p in root.rglob("*") if p.is_file())
        files.sort(key=lambda p: p.name == _LAST_DRIVER_FILE)
        for path in files:
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            s3.upload_file(str(path), bucket, key, ExtraArgs=extra)
            uploaded += path.stat().st_size
    return uri, uploaded


def render(submission: Submission, *, drivers: str) -> dict[str, Any]:
    """The CreateTrainingJob request for ``submission``, its drivers under ``drivers``."""
    return v3_request.create_training_job_request(
        submission,
        image=v3.training_image(submission.plan, submission.region),
        drivers=drivers,
        metric_definitions=submission.plan.metric_definitions,
    )


def default_bucket(boto: Any) -> str:
    """SDK v3's default bucket (``sagemaker-<region>-<account>``), created if absent."""
    return v3.sagemaker_session(boto, "").default_bucket()


def launch(
    plan: Plan,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    boto_session: Any = None,
    poll_seconds: float = DEFAULT_POLL_SECONDS,
) -> SageMakerJob:
    """Upload what is new, create the training job, return it (not waiting)."""
    request_.check_cloud_spec(plan.spec)
    v3_request.hyperparameters(plan)  # a value v3's container cannot carry fails here, first
    staged = stage(
        plan,
        bucket=bucket,
        role=role,
        region=region,
        boto_session=boto_session,
        default_bucket=default_bucket,
    )
    upload = staged.upload
    drivers, driver_bytes = upload_drivers(
        staged.boto, plan, staged.bucket, upload.uri, staged.kms_key, upload.files
    )
    client = staged.boto.client("sagemaker")
    submission = send_under_fresh_names(
        plan.spec.name,
        staged.bind,
        lambda bound: client.create_training_job(**render(bound, drivers=drivers)),
    )
    return SageMakerJob(
        submission.job_name,
        staged.boto,
        plan=plan,
        submission=submission,
        poll_seconds=poll_seconds,
        source_uri=upload.uri,
        uploaded_bytes=upload.uploaded_bytes,
        drivers_uri=drivers,
        drivers_uploaded_bytes=driver_bytes,
    )


def dry_run_request(submission: Submission) -> dict[str, Any]:
    """The request ``launch`` sends for ``submission``, its drivers where they would be."""
    digest = v3_request.drivers_digest(submission.plan, v3.sdk_version() or "", submission.code_uri)
    return render(submission, drivers=v3_request.drivers_uri(submission.bucket or "", digest))


def caller(plan: Plan) -> str:
    return ESTIMATOR
