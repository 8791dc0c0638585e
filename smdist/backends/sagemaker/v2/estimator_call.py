"""The SDK v2 estimator call a dry-run value makes: the constructor's and ``fit``'s arguments.

SDK v2 has no call that takes a CreateTrainingJob request: the estimator builds it. So the call
is derived from the value: the constructor's arguments from the Submission the value's request
was rendered from (the ``estimator_kwargs`` that ``request.create_training_job_request`` reads),
the code already at the value's ``source_uri``, the image, instances, storage, capacity and
tracking settings its request names (``resource_arguments``, ``tracking_arguments``); ``fit``'s
inputs from the request's InputDataConfig, its job name from TrainingJobName. Nothing is planned
or bound again. The call is plain values; ``sdk_objects`` makes the SDK's objects of them.
``tests/sdk_lines/test_send.py`` and ``tests/aws/test_conformance.py`` prove the request the
estimator then sends is the value's request, field for field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker.dry_run_value import DryRun
from smdist.checks.images import chosen_image
from smdist.contract.groups import DISTRIBUTION_GROUPS
from smdist.planning.submission import CODE_CHANNEL, Submission

# A channel's request fields the call carries over, each to its TrainingInput argument.
CHANNEL_FIELDS = {
    "S3Uri": "s3_data",
    "S3DataDistributionType": "distribution",
    "S3DataType": "s3_data_type",
    "InstanceGroupNames": "instance_groups",
}
# A file system channel's, each to its FileSystemInput argument.
FILE_SYSTEM_FIELDS = {
    "FileSystemId": "file_system_id",
    "FileSystemType": "file_system_type",
    "DirectoryPath": "directory_path",
    "FileSystemAccessMode": "file_system_access_mode",
}
# ResourceConfig's fields the estimator takes as they are.
RESOURCE_FIELDS = {
    "InstanceType": "instance_type",
    "InstanceCount": "instance_count",
    "TrainingPlanArn": "training_plan",
    "InstancePlacementConfig": "instance_placement_config",
}


@dataclass(frozen=True)
class EstimatorCall:
    """``<estimator>(**arguments).fit(inputs, job_name=job_name)``, as plain values."""

    estimator: str  # dotted class name: sagemaker.pytorch.PyTorch, ...TensorFlow
    # instance_groups as InstanceGroup's arguments, the distribution's groups by name, and
    # tensorboard_output_config as TensorBoardOutputConfig's arguments
    arguments: dict[str, Any]
    # channel -> TrainingInput's arguments, or FileSystemInput's (``file_system_id``, ...)
    inputs: dict[str, dict[str, Any]] | None
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


def _arguments(fields: dict[str, Any], names: dict[str, str], where: str) -> dict[str, Any]:
    unplaced = set(fields) - set(names)
    if unplaced:  # a bug in smdist: the request grew a field the call drops
        raise AssertionError(f"{where}: fields with no estimator argument {unplaced}")
    return {names[key]: value for key, value in fields.items()}


def fit_inputs(request: dict[str, Any], isolated: bool) -> dict[str, dict[str, Any]] | None:
    """``fit``'s inputs from the request's channels; under network isolation the code channel
    is left to the SDK, which adds it from ``source_dir`` as the request shows it."""
    inputs: dict[str, dict[str, Any]] = {}
    for channel in request.get("InputDataConfig", []):
        name = channel["ChannelName"]
        if isolated and name == CODE_CHANNEL:
            continue
        _arguments(channel, {"ChannelName": "", "DataSource": "", "InputMode": ""}, name)
        source = channel["DataSource"]
        if "FileSystemDataSource" in source:
            fields = source["FileSystemDataSource"]
            inputs[name] = _arguments(fields, FILE_SYSTEM_FIELDS, f"channel {name}")
            continue
        arguments = _arguments(source["S3DataSource"], CHANNEL_FIELDS, f"channel {name}")
        if channel.get("InputMode"):
            arguments["input_mode"] = channel["InputMode"]
        inputs[name] = arguments
    return inputs or None


def resource_arguments(resources: dict[str, Any]) -> dict[str, Any]:
    """The estimator's instances, storage and capacity from ResourceConfig. The estimator
    always writes VolumeSizeInGB: where the request has none, ``volume_size=None`` marks it
    for leaving out on the way to the service (``sdk.leave_out_unset_volume_size``)."""
    taken = {"VolumeSizeInGB", "VolumeKmsKeyId", "KeepAlivePeriodInSeconds", "InstanceGroups"}
    arguments = _arguments(
        {k: v for k, v in resources.items() if k not in taken},
        RESOURCE_FIELDS,
        "ResourceConfig",
    )
    arguments["volume_size"] = resources.get("VolumeSizeInGB")
    if "InstanceGroups" in resources:  # the estimator refuses a type and count beside them
        arguments.update(instance_type=None, instance_count=None)
        arguments["instance_groups"] = [
            {
                "instance_group_name": group["InstanceGroupName"],
                "instance_type": group["InstanceType"],
                "instance_count": group["InstanceCount"],
            }
            for group in resources["InstanceGroups"]
        ]
    return arguments


def tracking_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """Retries, infrastructure checks, remote debugging and TensorBoard from the request."""
    arguments: dict[str, Any] = {}
    if "RetryStrategy" in request:
        arguments["max_retry_attempts"] = request["RetryStrategy"]["MaximumRetryAttempts"]
    if "InfraCheckConfig" in request:
        arguments["enable_infra_check"] = request["InfraCheckConfig"]["EnableInfraCheck"]
    if "RemoteDebugConfig" in request:
        arguments["enable_remote_debug"] = request["RemoteDebugConfig"]["EnableRemoteDebug"]
    if "TensorBoardOutputConfig" in request:
        tensorboard = request["TensorBoardOutputConfig"]
        arguments["tensorboard_output_config"] = {
            "s3_output_path": tensorboard["S3OutputPath"],
            "container_local_output_path": tensorboard.get("LocalPath"),
        }
    return arguments


def _group_arguments(submission: Submission, arguments: dict[str, Any]) -> None:
    """On instance groups: the distribution names its group (the SDK validates it against the
    estimator's), and the toolkit's values go among the hyperparameters, since with groups the
    SDK derives them only in part (``request.group_hyperparameters``); where the SDK writes one
    itself, its value is the same."""
    plan = submission.plan
    groups = request_.group_hyperparameters(plan)
    if not groups:
        return
    if arguments.get("distribution"):
        names = groups[DISTRIBUTION_GROUPS]
        arguments["distribution"] = {**arguments["distribution"], "instance_groups": names}
    arguments["hyperparameters"] = {
        **arguments.get("hyperparameters", {}),
        **plan.launch.toolkit_hyperparameters,
        **groups,
    }


def estimator_call(shown: DryRun) -> EstimatorCall:
    """The estimator call that sends ``shown``'s request."""
    submission, request = shown.submission, shown.request
    arguments = estimator_kwargs(submission)
    arguments["image_uri"] = request["AlgorithmSpecification"]["TrainingImage"]
    arguments.update(resource_arguments(request["ResourceConfig"]))
    arguments.update(tracking_arguments(request))
    _group_arguments(submission, arguments)
    return EstimatorCall(
        estimator=submission.plan.estimator,
        arguments=arguments,
        inputs=fit_inputs(request, submission.spec.network.isolation),
        job_name=request["TrainingJobName"],
    )


__all__ = [
    "EstimatorCall",
    "estimator_call",
    "estimator_kwargs",
    "fit_inputs",
    "resource_arguments",
    "tracking_arguments",
]
