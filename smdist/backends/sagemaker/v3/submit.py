"""Real SageMaker training jobs, as SDK v3's ``ModelTrainer`` would submit them.

The ``sagemaker`` backend comes here when the installed SageMaker Python SDK is 3.x. The request
is v3's, field for field (``v3_request``; ``tests/aws_v3`` compares it with what
``ModelTrainer.train()`` sends), and so are the two channels the container reads: the code, and
the drivers v3 would upload (``v3_drivers.write_drivers``). What differs is the cost:
both channels live under content-addressed S3 keys (``smdist/source/<digest>/sourcedir.tar.gz``,
``smdist/drivers/<digest>/``), found by one HeadObject each and uploaded only when new, where
``train()`` uploads both again for every job, creates its bucket in a dry run, and names jobs by
the second. ``send`` takes the dry-run value (``ROUTE``): it uploads what the request's two
channels name and sends the request with boto3's CreateTrainingJob, the call v3 itself makes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from smdist.backends.job_names import unique_job_name
from smdist.backends.sagemaker import sending
from smdist.backends.sagemaker.dry_run_value import DryRun, Route
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob
from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.backends.sagemaker.v3.drivers import write_drivers
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
    uri: str,
    code_uri: str,
    kms_key: str | None = None,
    files: list[str] | None = None,
) -> int:
    """The drivers for ``plan`` at ``uri`` (the request's sm_drivers channel); the bytes
    uploaded (0 when already there). ``files``: the code's file list (default: the bundle's)."""
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    s3 = boto_session.client("s3")
    if not _missing(s3, bucket, f"{prefix}/{_LAST_DRIVER_FILE}"):
        return 0
    extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key} if kms_key else None
    uploaded = 0
    with tempfile.TemporaryDirectory(prefix="smdist-drivers-") as tmp:
        root = Path(tmp)

        write_drivers(plan, code_uri, root, files)
        paths = sorted(p for p in root.rglob("*") if p.is_file())
        paths.sort(key=lambda p: p.name == _LAST_DRIVER_FILE)
        for path in paths:
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            s3.upload_file(str(path), bucket, key, ExtraArgs=extra)
            uploaded += path.stat().st_size
    return uploaded


def drivers_of(request: dict[str, Any]) -> str:
    """The S3 prefix of the request's sm_drivers channel."""
    (channel,) = [
        c for c in request["InputDataConfig"] if c["ChannelName"] == v3_request.DRIVERS_CHANNEL
    ]
    return channel["DataSource"]["S3DataSource"]["S3Uri"]


def render(submission: Submission) -> dict[str, Any]:
    """The CreateTrainingJob request for ``submission``, its drivers under the prefix their
    content names (from the plan, the SDK and the code's place: not the job name)."""
    digest = v3_request.drivers_digest(submission.plan, v3.sdk_version() or "", submission.code_uri)
    return v3_request.create_training_job_request(
        submission,
        image=v3.training_image(submission.plan, submission.region),
        drivers=v3_request.drivers_uri(submission.bucket or "", digest),
        metric_definitions=submission.plan.metric_definitions,
    )


def default_bucket(boto: Any) -> str:
    """SDK v3's default bucket (``sagemaker-<region>-<account>``), created if absent."""
    return v3.sagemaker_session(boto, "").default_bucket()


def check(plan: Plan) -> None:
    """A value v3's container cannot carry fails here, before any AWS call."""
    v3_request.hyperparameters(plan)


def send(
    shown: DryRun, boto_session: Any = None, *, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> SageMakerJob:
    """Upload the code and drivers ``shown`` names if new, send its request, return the job."""
    boto = sending.session_for(shown, boto_session)
    upload = sending.upload_code(boto, shown)
    drivers = drivers_of(shown.request)
    kms = shown.submission.estimator_kwargs.get("output_kms_key")
    driver_bytes = upload_drivers(boto, shown.plan, drivers, upload.uri, kms, upload.files)
    client = boto.client("sagemaker")
    sent = sending.send_under_its_name(
        shown,
        lambda value: client.create_training_job(**value.request),
        lambda: unique_job_name(shown.plan.spec.name),
    )
    return SageMakerJob(
        sent.job_name,
        boto,
        **sending.job_arguments(sent, upload, poll_seconds),
        drivers_uri=drivers,
        drivers_uploaded_bytes=driver_bytes,
    )


def caller(plan: Plan) -> str:
    return ESTIMATOR


ROUTE = Route(
    name="sdk-v3",
    request_key="CreateTrainingJob",
    check=check,
    render=render,
    caller=caller,
    fresh_name=lambda plan: unique_job_name(plan.spec.name),
    default_bucket=default_bucket,
    send=send,
)
