"""Real SageMaker training jobs through SDK v2's estimators (``smdist[sagemaker-v2]``).

The plan is bound to the job (a ``Submission``) and the estimator is built from it with the code
already in S3 (``upload``), so the SDK uploads nothing itself; ``dry_run`` renders the same
Submission as the CreateTrainingJob request the estimator sends (``request``), with no AWS call.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.job_names import send_under_fresh_names
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob
from smdist.backends.sagemaker.staging import stage
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission


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
    staged = stage(
        plan,
        bucket=bucket,
        role=role,
        region=region,
        boto_session=boto_session,
        default_bucket=default_bucket,
    )
    session = sdk.sagemaker_session(staged.boto, staged.bucket)
    estimator_class = sdk.estimator_class(plan.estimator)

    def send(submission: Submission) -> None:
        with sdk.contained():
            estimator = estimator_class(sagemaker_session=session, **estimator_kwargs(submission))
            estimator.fit(
                training_inputs(plan), job_name=submission.job_name, wait=False, logs=False
            )

    submission = send_under_fresh_names(plan.spec.name, staged.bind, send)
    return SageMakerJob(
        submission.job_name,
        staged.boto,
        plan=plan,
        submission=submission,
        poll_seconds=poll_seconds,
        source_uri=staged.upload.uri,
        uploaded_bytes=staged.upload.uploaded_bytes,
    )


def default_bucket(boto: Any) -> str:
    """SDK v2's default bucket (``sagemaker-<region>-<account>``), created if absent."""
    with sdk.contained():
        return sdk.sagemaker_session(boto).default_bucket()


def dry_run_request(submission: Submission) -> dict[str, Any]:
    """The CreateTrainingJob request the estimator sends for ``submission``."""
    image = request_.training_image(submission.plan, submission.region)
    return request_.create_training_job_request(submission, image=image)


def caller(plan: Plan) -> str:
    return plan.estimator
