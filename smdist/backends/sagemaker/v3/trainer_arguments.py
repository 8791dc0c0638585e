"""ModelTrainer's arguments, read from the request smdist renders for a Submission.

``trainer_kwargs`` takes everything but the session, role, name, code and ``distributed=``
from ``v3_request.create_training_job_request``, so that what a ModelTrainer sends and what
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


def _channels(request: dict[str, Any]) -> list[Any]:
    """The user's channels of ``request`` as v3 configs (v3 adds the code and drivers)."""
    from sagemaker.core.training.configs import Channel, DataSource, S3DataSource

    channels = []
    for channel in request["InputDataConfig"]:
        name = channel["ChannelName"]
        if name in (v3_request.CODE_CHANNEL, v3_request.DRIVERS_CHANNEL):
            continue
        s3 = channel["DataSource"]["S3DataSource"]
        source = S3DataSource(
            s3_data_type=s3["S3DataType"],
            s3_uri=s3["S3Uri"],
            s3_data_distribution_type=s3["S3DataDistributionType"],
        )
        extra = {"input_mode": channel["InputMode"]} if "InputMode" in channel else {}
        channels.append(
            Channel(channel_name=name, data_source=DataSource(s3_data_source=source), **extra)
        )
    return channels


def _compute(request: dict[str, Any]) -> Any:
    from sagemaker.core.training.configs import Compute

    resources = request["ResourceConfig"]
    return Compute(
        instance_type=resources["InstanceType"],
        instance_count=resources["InstanceCount"],
        # None where SageMaker refuses the field (request.volume_fields); SDK 3.27 and later
        # leave it out there too.
        volume_size_in_gb=resources.get("VolumeSizeInGB"),
        volume_kms_key_id=resources.get("VolumeKmsKeyId"),
        keep_alive_period_in_seconds=resources.get("KeepAlivePeriodInSeconds"),
        enable_managed_spot_training=request.get("EnableManagedSpotTraining"),
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


def trainer_kwargs(submission: Submission) -> dict[str, Any]:
    """ModelTrainer's arguments apart from session, role, name and code: read from the request
    smdist renders for ``submission`` (``v3_request``), so both say the same."""
    from sagemaker.core.training.configs import OutputDataConfig, StoppingCondition, Tag

    request = v3_request.create_training_job_request(
        submission,
        image=training_image(submission.plan, submission.region),
        drivers="",  # v3 uploads its own drivers
        metric_definitions=[],
    )
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
