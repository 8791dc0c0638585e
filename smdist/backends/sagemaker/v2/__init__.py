"""Real SageMaker training jobs through SDK v2's estimators (``smdist[sagemaker-v2]``).

The plan is bound to the job (a ``Submission``) and the estimator is built from it with the code
already in S3 (``upload``), so the SDK uploads nothing itself; ``dry_run`` renders the same
Submission as the CreateTrainingJob request the estimator sends (``request``), with no AWS call.
"""

from __future__ import annotations

import os
from typing import Any

from smdist.backends.job_names import send_under_fresh_names
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.account import require_role
from smdist.backends.sagemaker.buckets import require_bucket
from smdist.backends.sagemaker.dry_run import BUCKET_VARIABLE
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob
from smdist.backends.sagemaker.upload import upload_source
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission


def _output_kms_key(plan: Plan) -> str | None:
    return plan.estimator_kwargs.get("output_kms_key")


def estimator_kwargs(submission: Submission) -> dict[str, Any]:
    """The job's estimator arguments with the code already in S3 and the backend's own."""
    kwargs = dict(submission.estimator_kwargs)
    kwargs["source_dir"] = submission.code_uri
    if "image_uri" not in kwargs:  # smdist's catalogue names the image, not the SDK's tables
        from smdist.checks.images import chosen_image

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
    """Upload the code if it is new, create the training job, return it (not waiting)."""
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


def dry_run_request(submission: Submission) -> dict[str, Any]:
    """The CreateTrainingJob request the estimator sends for ``submission``."""
    image = request_.training_image(submission.plan, submission.region)
    return request_.create_training_job_request(submission, image=image)


def caller(plan: Plan) -> str:
    return plan.estimator
