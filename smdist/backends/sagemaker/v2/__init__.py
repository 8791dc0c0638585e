"""Real SageMaker training jobs through SDK v2's estimators (``smdist[sagemaker-v2]``).

``render`` turns the bound plan (a ``Submission``) into the CreateTrainingJob request the
estimator sends (``request``), with no AWS call; ``send`` takes that dry-run value (``ROUTE``),
puts the code at its ``source_uri`` and makes the estimator call derived from it
(``estimator_call``), the code already in S3, so the SDK uploads nothing itself. What the
estimator has no argument for is refused before any of it (``carriage``, the route's check).
"""

from __future__ import annotations

from typing import Any

from smdist.backends.job_names import unique_job_name
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker import sending
from smdist.backends.sagemaker.dry_run_value import DryRun, Route
from smdist.backends.sagemaker.job import DEFAULT_POLL_SECONDS, SageMakerJob
from smdist.backends.sagemaker.v2 import sdk_objects
from smdist.backends.sagemaker.v2.carriage import carriage_problems, check
from smdist.backends.sagemaker.v2.estimator_call import estimator_call, estimator_kwargs
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission


def training_inputs(plan: Plan) -> dict[str, Any] | None:
    """The plan's channels as TrainingInputs (the local-mode runs' ``fit``)."""
    return sdk_objects.fit_inputs(
        {
            name: {"s3_data": c.uri, "distribution": c.distribution, "input_mode": c.input_mode}
            for name, c in plan.spec.inputs.items()
        }
    )


def send(
    shown: DryRun, boto_session: Any = None, *, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> SageMakerJob:
    """Upload ``shown``'s code if new, make the estimator call derived from ``shown``, return
    the job (not waiting)."""
    boto = sending.session_for(shown, boto_session)
    upload = sending.upload_code(boto, shown)
    session = sdk.sagemaker_session(boto, shown.submission.bucket)
    sdk.leave_out_unset_volume_size(session)

    def fit(value: DryRun) -> None:
        call = estimator_call(value)
        estimator_class = sdk.estimator_class(call.estimator)
        with sdk.contained():
            arguments = sdk_objects.estimator_arguments(call.arguments)
            estimator = estimator_class(sagemaker_session=session, **arguments)
            estimator.fit(
                sdk_objects.fit_inputs(call.inputs), job_name=call.job_name, wait=False, logs=False
            )

    sent = sending.send_under_its_name(shown, fit, lambda: unique_job_name(shown.plan.spec.name))
    return SageMakerJob(sent.job_name, boto, **sending.job_arguments(sent, upload, poll_seconds))


def default_bucket(boto: Any) -> str:
    """SDK v2's default bucket (``sagemaker-<region>-<account>``), created if absent."""
    with sdk.contained():
        return sdk.sagemaker_session(boto).default_bucket()


def render(submission: Submission) -> dict[str, Any]:
    """The CreateTrainingJob request the estimator sends for ``submission``."""
    image = request_.training_image(submission.plan, submission.region)
    return request_.create_training_job_request(submission, image=image)


def caller(plan: Plan) -> str:
    return plan.estimator


ROUTE = Route(
    name="sdk-v2",
    request_key="CreateTrainingJob",
    check=check,
    render=render,
    caller=caller,
    fresh_name=lambda plan: unique_job_name(plan.spec.name),
    default_bucket=default_bucket,
    send=send,
)

__all__ = [
    "ROUTE",
    "carriage_problems",
    "estimator_call",
    "estimator_kwargs",
    "render",
    "send",
    "training_inputs",
]
