"""ModelTrainer's arguments, read from the request smdist renders for a Submission.

``trainer_kwargs`` takes everything but the session, role, name, code and ``distributed=``
from ``v3_request.create_training_job_request``, and ``with_job_settings`` the settings
ModelTrainer takes through its ``with_*`` methods (retries, infrastructure checks, remote
debugging, TensorBoard, and smdist's MLflow), so that what a ModelTrainer sends and what
smdist shows and sends say the same. The SDK's config classes are imported inside the
functions: this module imports with SDK v2 installed.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission


def training_image(plan: Plan, region: str) -> str:
    """``code.image_uri``, or the DLC URI from smdist's catalogue (v3's own tables are stale)."""
    return request_.training_image(plan, region)


def _data_source(source: dict[str, Any]) -> Any:
    """A channel's DataSource as a v3 config: an S3 prefix (on its groups) or a file system."""
    from sagemaker.core.training.configs import DataSource, FileSystemDataSource, S3DataSource

    if "FileSystemDataSource" in source:
        system = source["FileSystemDataSource"]
        return DataSource(
            file_system_data_source=FileSystemDataSource(
                file_system_id=system["FileSystemId"],
                file_system_access_mode=system["FileSystemAccessMode"],
                file_system_type=system["FileSystemType"],
                directory_path=system["DirectoryPath"],
            )
        )
    s3 = source["S3DataSource"]
    groups = (
        {"instance_group_names": s3["InstanceGroupNames"]} if "InstanceGroupNames" in s3 else {}
    )
    return DataSource(
        s3_data_source=S3DataSource(
            s3_data_type=s3["S3DataType"],
            s3_uri=s3["S3Uri"],
            s3_data_distribution_type=s3["S3DataDistributionType"],
            **groups,
        )
    )


def _channels(request: dict[str, Any]) -> list[Any]:
    """The user's channels of ``request`` as v3 configs (v3 adds the code and drivers)."""
    from sagemaker.core.training.configs import Channel

    channels = []
    for channel in request["InputDataConfig"]:
        name = channel["ChannelName"]
        if name in (v3_request.CODE_CHANNEL, v3_request.DRIVERS_CHANNEL):
            continue
        extra = {"input_mode": channel["InputMode"]} if "InputMode" in channel else {}
        channels.append(
            Channel(channel_name=name, data_source=_data_source(channel["DataSource"]), **extra)
        )
    return channels


def _capacity(resources: dict[str, Any]) -> dict[str, Any]:
    """Compute's instance groups, preferences, training plan and UltraServer placement."""
    from sagemaker.core import shapes
    from sagemaker.core.training.configs import InstanceGroup

    groups = [
        InstanceGroup(
            instance_type=group["InstanceType"],
            instance_count=group["InstanceCount"],
            instance_group_name=group["InstanceGroupName"],
        )
        for group in resources.get("InstanceGroups", [])
    ]
    preferences = [
        # An explicit None where no plan is named: Compute dumps its preferences, and an unset
        # (Unassigned) list makes pydantic warn.
        shapes.InstancePreference(
            instance_type=choice["InstanceType"],
            instance_count=choice["InstanceCount"],
            training_plan_arns=choice.get("TrainingPlanArns"),
        )
        for choice in resources.get("InstancePreferences", [])
    ]
    placement = resources.get("InstancePlacementConfig")
    if placement is not None:
        placement = shapes.InstancePlacementConfig(
            enable_multiple_jobs=placement.get("EnableMultipleJobs", False),
            placement_specifications=[
                # An explicit None: Compute._to_resource_config re-validates its dump, where an
                # unset id (Unassigned) fails as not a string.
                shapes.PlacementSpecification(
                    instance_count=spec["InstanceCount"], ultra_server_id=spec.get("UltraServerId")
                )
                for spec in placement.get("PlacementSpecifications", [])
            ],
        )
    return {
        "instance_groups": groups or None,
        "instance_preferences": preferences or None,
        "training_plan_arn": resources.get("TrainingPlanArn"),
        "instance_placement_config": placement,
    }


def _compute(request: dict[str, Any]) -> Any:
    from sagemaker.core.training.configs import Compute

    resources = request["ResourceConfig"]
    return Compute(
        # None with instance groups or preferences: v3 then leaves them unset (get_compute).
        instance_type=resources.get("InstanceType"),
        instance_count=resources.get("InstanceCount"),
        # None where SageMaker refuses the field (job_settings.volume_fields); 3.27's
        # get_compute then puts its default 30 back.
        volume_size_in_gb=resources.get("VolumeSizeInGB"),
        volume_kms_key_id=resources.get("VolumeKmsKeyId"),
        keep_alive_period_in_seconds=resources.get("KeepAlivePeriodInSeconds"),
        enable_managed_spot_training=request.get("EnableManagedSpotTraining"),
        **_capacity(resources),
    )


def _networking(request: dict[str, Any]) -> Any:
    """The VPC, isolation and encryption settings, or None where the request has none."""
    from sagemaker.core.training.configs import Networking

    vpc = request.get("VpcConfig", {})
    isolated = request.get("EnableNetworkIsolation")
    encrypted = request.get("EnableInterContainerTrafficEncryption")
    if not (vpc or isolated or encrypted):
        return None
    return Networking(
        subnets=vpc.get("Subnets"),
        security_group_ids=vpc.get("SecurityGroupIds"),
        enable_network_isolation=isolated,
        enable_inter_container_traffic_encryption=encrypted,
    )


def _checkpoint_config(request: dict[str, Any]) -> Any:
    from sagemaker.core.training.configs import CheckpointConfig

    checkpoint = request.get("CheckpointConfig")
    if not checkpoint:
        return None
    return CheckpointConfig(s3_uri=checkpoint["S3Uri"], local_path=checkpoint["LocalPath"])


def trainer_request(submission: Submission) -> dict[str, Any]:
    """smdist's request for ``submission`` as a ModelTrainer reads it (v3 uploads its own
    drivers; the metric definitions are set with ``with_metric_definitions``); SpecError for
    what v3 cannot carry."""
    return v3_request.create_training_job_request(
        submission,
        image=training_image(submission.plan, submission.region),
        drivers="",
        metric_definitions=[],
    )


def trainer_kwargs(submission: Submission, request: dict[str, Any] | None = None) -> dict[str, Any]:
    """ModelTrainer's arguments apart from session, role, name and code: read from the request
    smdist renders for ``submission`` (``trainer_request``, or ``request``), so both say the
    same."""
    from sagemaker.core.training.configs import OutputDataConfig, StoppingCondition, Tag

    if request is None:
        request = trainer_request(submission)
    stopping, output = request["StoppingCondition"], request["OutputDataConfig"]
    return {
        "training_image": request["AlgorithmSpecification"]["TrainingImage"],
        "compute": _compute(request),
        "stopping_condition": StoppingCondition(
            max_runtime_in_seconds=stopping["MaxRuntimeInSeconds"],
            max_wait_time_in_seconds=stopping.get("MaxWaitTimeInSeconds"),
        ),
        # Always explicit: v3 would otherwise resolve (and create) its default bucket while the
        # ModelTrainer is being constructed.
        "output_data_config": OutputDataConfig(
            s3_output_path=output["S3OutputPath"], kms_key_id=output.get("KmsKeyId")
        ),
        "networking": _networking(request),
        "checkpoint_config": _checkpoint_config(request),
        "input_data_config": _channels(request) or None,
        "hyperparameters": request["HyperParameters"],
        "environment": dict(request.get("Environment", {})),
        "tags": [Tag(key=tag["Key"], value=tag["Value"]) for tag in request.get("Tags", [])]
        or None,
    }


def with_job_settings(trainer: Any, request: dict[str, Any], tensorboard_bucket: str | None) -> Any:
    """``trainer`` (smdist's ModelTrainer) with the request's retries, infrastructure checks,
    remote debugging, TensorBoard and MLflow; with ``tensorboard_bucket`` (the job names no
    ``tensorboard.s3_uri``) TensorBoard's logs go under each job's own name there."""
    from sagemaker.core import shapes
    from sagemaker.core.training.configs import (
        InfraCheckConfig,
        RemoteDebugConfig,
        RetryStrategy,
        TensorBoardOutputConfig,
    )

    if "RetryStrategy" in request:
        attempts = request["RetryStrategy"]["MaximumRetryAttempts"]
        trainer.with_retry_strategy(RetryStrategy(maximum_retry_attempts=attempts))
    if "InfraCheckConfig" in request:
        trainer.with_infra_check_config(InfraCheckConfig(enable_infra_check=True))
    if "RemoteDebugConfig" in request:
        trainer.with_remote_debug_config(RemoteDebugConfig(enable_remote_debug=True))
    tensorboard = request.get("TensorBoardOutputConfig")
    if tensorboard is not None:
        trainer.with_tensorboard_output_config(
            TensorBoardOutputConfig(
                s3_output_path=tensorboard["S3OutputPath"], local_path=tensorboard["LocalPath"]
            )
        )
        if tensorboard_bucket:
            trainer.with_tensorboard_under_job_name(tensorboard_bucket)
    mlflow = request.get("MlflowConfig")
    if mlflow is not None:
        trainer.with_mlflow_config(
            shapes.MlflowConfig(
                mlflow_resource_arn=mlflow["MlflowResourceArn"],
                mlflow_experiment_name=mlflow.get("MlflowExperimentName"),
                mlflow_run_name=mlflow.get("MlflowRunName"),
            )
        )
    return trainer
