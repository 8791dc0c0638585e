"""The SDK v2 estimator call a dry-run value makes: the constructor's and ``fit``'s arguments.

SDK v2 has no call that takes a CreateTrainingJob request: the estimator builds it. So the call
is derived from the value: the constructor's arguments from the Submission the value's request
was rendered from (the ``estimator_kwargs`` that ``request.create_training_job_request`` reads),
the code already at the value's ``source_uri``, the image its request names; ``fit``'s inputs
from the request's InputDataConfig, its job name from TrainingJobName. Nothing is planned or
bound again. ``tests/sdk_lines/test_send.py`` proves the request the estimator then sends is
the value's request, field for field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker.dry_run_value import DryRun
from smdist.checks.images import chosen_image
from smdist.planning.submission import CODE_CHANNEL, Submission

# A channel's request fields the call carries over, each to its TrainingInput argument.
CHANNEL_FIELDS = {
    "S3Uri": "s3_data",
    "S3DataDistributionType": "distribution",
    "S3DataType": "s3_data_type",
}


@dataclass(frozen=True)
class EstimatorCall:
    """``<estimator>(**arguments).fit(inputs, job_name=job_name)``, as plain values."""

    estimator: str  # dotted class name: sagemaker.pytorch.PyTorch, ...TensorFlow
    arguments: dict[str, Any]
    inputs: dict[str, dict[str, Any]] | None  # channel -> TrainingInput's arguments
    job_name: str


def estimator_kwargs(submission: Submission) -> dict[str, Any]:
    """The job's estimator arguments with the code already in S3 and the backend's own."""
    kwargs = dict(submission.estimator_kwargs)
    kwargs["source_dir"] = submission.code_uri
    if "image_uri" not in kwargs:  # smdist's catalogue names the image, not the SDK's tables
        plan_ = submission.plan
        kwargs["image_uri"] = request_.training_image(plan_, submission.region)
        image = chosen_image(plan_.spec)
        if image is not None:  # the estimator still validates the distribution by version
            kwargs["framework_version"] = kwargs.get("framework_version") or image.version
            kwargs["py_version"] = kwargs.get("py_version") or image.py_versions[-1]
    kwargs.update(request_.BACKEND_ESTIMATOR_KWARGS)
    return kwargs


def fit_inputs(request: dict[str, Any], isolated: bool) -> dict[str, dict[str, Any]] | None:
    """``fit``'s inputs from the request's channels; under network isolation the code channel
    is left to the SDK, which adds it from ``source_dir`` as the request shows it."""
    inputs: dict[str, dict[str, Any]] = {}
    for channel in request.get("InputDataConfig", []):
        name = channel["ChannelName"]
        if isolated and name == CODE_CHANNEL:
            continue
        source = channel["DataSource"]["S3DataSource"]
        unplaced = (set(channel) - {"ChannelName", "DataSource", "InputMode"}) | (
            set(source) - set(CHANNEL_FIELDS)
        )
        if unplaced:  # a bug in smdist: the request grew a channel field the call drops
            raise AssertionError(
                f"channel {name}: fields with no TrainingInput argument {unplaced}"
            )
        arguments = {CHANNEL_FIELDS[key]: value for key, value in source.items()}
        if channel.get("InputMode"):
            arguments["input_mode"] = channel["InputMode"]
        inputs[name] = arguments
    return inputs or None


def estimator_call(shown: DryRun) -> EstimatorCall:
    """The estimator call that sends ``shown``'s request."""
    submission = shown.submission
    arguments = estimator_kwargs(submission)
    arguments["image_uri"] = shown.request["AlgorithmSpecification"]["TrainingImage"]
    if "VolumeSizeInGB" not in shown.request["ResourceConfig"]:
        # The estimator always writes VolumeSizeInGB; None marks it for leaving out on the way
        # to the service (sdk.leave_out_unset_volume_size), as the request does.
        arguments["volume_size"] = None
    return EstimatorCall(
        estimator=submission.plan.estimator,
        arguments=arguments,
        inputs=fit_inputs(shown.request, submission.spec.network.isolation),
        job_name=shown.request["TrainingJobName"],
    )


__all__ = ["EstimatorCall", "estimator_call", "estimator_kwargs", "fit_inputs"]
