"""Write ``sagemaker_api.json``: the limits and names the SageMaker API itself states.

The CreateTrainingJob API states its own limits (name patterns, maximum lengths and counts, the
instance types it accepts, the warm-pool ceiling) in botocore's SageMaker service model, and its
Regions in botocore's endpoint data. smdist checks jobs against those facts, but botocore is not
one of its dependencies, so this script copies them into a dated data file that
``smdist.catalog.api`` reads. Re-run it after upgrading botocore:

    python -m smdist.catalog.snapshot [--date YYYY-MM-DD] [--output PATH]

A unit test compares the file with what the installed botocore says.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
from pathlib import Path
from typing import Any

SERVICE = "sagemaker"
OPERATION = "CreateTrainingJob"
TUNING = "CreateHyperParameterTuningJob"
OUTPUT = Path(__file__).with_name("sagemaker_api.json")

# smdist's name for each fact -> where CreateTrainingJob's input states it (``Operation:path``:
# another operation's). ``[]`` steps into a list's member, ``.key`` / ``.value`` into a map's key
# or value shape.
FIELDS = {
    "job_name": "TrainingJobName",
    "role_arn": "RoleArn",
    "hyperparameters": "HyperParameters",
    "hyperparameter_key": "HyperParameters.key",
    "hyperparameter_value": "HyperParameters.value",
    "environment": "Environment",
    "environment_key": "Environment.key",
    "environment_value": "Environment.value",
    "input_channels": "InputDataConfig",
    "channel_name": "InputDataConfig[].ChannelName",
    "input_mode": "InputDataConfig[].InputMode",
    "s3_data_distribution": "InputDataConfig[].DataSource.S3DataSource.S3DataDistributionType",
    "s3_uri": "OutputDataConfig.S3OutputPath",
    "checkpoint_s3_uri": "CheckpointConfig.S3Uri",
    "checkpoint_local_path": "CheckpointConfig.LocalPath",
    "kms_key_id": "OutputDataConfig.KmsKeyId",
    "training_image": "AlgorithmSpecification.TrainingImage",
    "instance_type": "ResourceConfig.InstanceType",
    "instance_count": "ResourceConfig.InstanceCount",
    "keep_alive": "ResourceConfig.KeepAlivePeriodInSeconds",
    "volume_size": "ResourceConfig.VolumeSizeInGB",
    "instance_groups": "ResourceConfig.InstanceGroups",
    "instance_group_name": "ResourceConfig.InstanceGroups[].InstanceGroupName",
    "training_plan_arn": "ResourceConfig.TrainingPlanArn",
    "instance_preferences": "ResourceConfig.InstancePreferences",
    "placement_specifications": "ResourceConfig.InstancePlacementConfig.PlacementSpecifications",
    "ultra_server_id": "ResourceConfig.InstancePlacementConfig.PlacementSpecifications[]"
    ".UltraServerId",
    "channel_instance_groups": "InputDataConfig[].DataSource.S3DataSource.InstanceGroupNames",
    "file_system_id": "InputDataConfig[].DataSource.FileSystemDataSource.FileSystemId",
    "file_system_directory": "InputDataConfig[].DataSource.FileSystemDataSource.DirectoryPath",
    "retry_attempts": "RetryStrategy.MaximumRetryAttempts",
    "tensorboard_local_path": "TensorBoardOutputConfig.LocalPath",
    "mlflow_arn": "MlflowConfig.MlflowResourceArn",
    "mlflow_experiment": "MlflowConfig.MlflowExperimentName",
    "mlflow_run_name": "MlflowConfig.MlflowRunName",
    "max_runtime": "StoppingCondition.MaxRuntimeInSeconds",
    "max_wait": "StoppingCondition.MaxWaitTimeInSeconds",
    "subnets": "VpcConfig.Subnets",
    "subnet_id": "VpcConfig.Subnets[]",
    "security_group_ids": "VpcConfig.SecurityGroupIds",
    "security_group_id": "VpcConfig.SecurityGroupIds[]",
    "tags": "Tags",
    "tag_key": "Tags[].Key",
    "tag_value": "Tags[].Value",
    # hyperparameter tuning: CreateHyperParameterTuningJob's own limits
    "tuning_job_name": f"{TUNING}:HyperParameterTuningJobName",
    "tuning_strategy": f"{TUNING}:HyperParameterTuningJobConfig.Strategy",
    "tuning_objective_metric": f"{TUNING}:HyperParameterTuningJobConfig"
    ".HyperParameterTuningJobObjective.MetricName",
    "tuning_max_jobs": f"{TUNING}:HyperParameterTuningJobConfig.ResourceLimits"
    ".MaxNumberOfTrainingJobs",
    "tuning_max_parallel_jobs": f"{TUNING}:HyperParameterTuningJobConfig.ResourceLimits"
    ".MaxParallelTrainingJobs",
    "tuning_max_runtime": f"{TUNING}:HyperParameterTuningJobConfig.ResourceLimits"
    ".MaxRuntimeInSeconds",
    "tuning_ranges": f"{TUNING}:HyperParameterTuningJobConfig.ParameterRanges"
    ".ContinuousParameterRanges",
    "tuning_range_value": f"{TUNING}:HyperParameterTuningJobConfig.ParameterRanges"
    ".ContinuousParameterRanges[].MinValue",
    "tuning_categorical_values": f"{TUNING}:HyperParameterTuningJobConfig.ParameterRanges"
    ".CategoricalParameterRanges[].Values",
    "tuning_scaling": f"{TUNING}:HyperParameterTuningJobConfig.ParameterRanges"
    ".ContinuousParameterRanges[].ScalingType",
    "tuning_hyperband_resource": f"{TUNING}:HyperParameterTuningJobConfig.StrategyConfig"
    ".HyperbandStrategyConfig.MinResource",
    "tuning_environment": f"{TUNING}:TrainingJobDefinition.Environment",
    "tuning_metric_definitions": f"{TUNING}:TrainingJobDefinition.AlgorithmSpecification"
    ".MetricDefinitions",
    "metric_name": f"{TUNING}:TrainingJobDefinition.AlgorithmSpecification"
    ".MetricDefinitions[].Name",
    "metric_regex": f"{TUNING}:TrainingJobDefinition.AlgorithmSpecification"
    ".MetricDefinitions[].Regex",
    "tuning_warm_start_parents": f"{TUNING}:WarmStartConfig.ParentHyperParameterTuningJobs",
    "tuning_warm_start_type": f"{TUNING}:WarmStartConfig.WarmStartType",
}

# Some ceilings are stated only in the member's documentation, e.g. MaxRuntimeInSeconds:
# "The maximum value is 28 days."
_DOCUMENTED_MAXIMUM = re.compile(r"The maximum value is (\d+) (second|minute|hour|day)s?\b")
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def _resolve(input_shape: Any, path: str) -> tuple[Any, str]:
    """The shape at ``path`` and the documentation of the member that holds it."""
    shape, documentation = input_shape, ""
    for part in path.split("."):
        in_list = part.endswith("[]")
        name = part[:-2] if in_list else part
        if name in ("key", "value") and shape.type_name == "map":
            shape = shape.key if name == "key" else shape.value
        else:
            documentation = shape.members[name].documentation or ""
            shape = shape.members[name]
        if in_list:
            shape = shape.member
    return shape, documentation


def _describe(shape: Any, member: str, documentation: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"member": member, "shape": shape.name}
    entry["type"] = shape.type_name
    for key in ("min", "max", "pattern"):
        if key in shape.metadata:
            entry[key] = shape.metadata[key]
    enum = getattr(shape, "enum", None)
    if enum:
        entry["enum"] = list(enum)
    found = _DOCUMENTED_MAXIMUM.search(re.sub(r"<[^>]+>", "", documentation))
    if found and "max" not in entry:
        entry["documented_max"] = int(found.group(1)) * _UNIT_SECONDS[found.group(2)]
        entry["documented_max_text"] = found.group(0)
    return entry


def build_snapshot(date: str) -> dict[str, Any]:
    """Every fact ``sagemaker_api.json`` holds, read from the installed botocore."""
    import botocore
    import botocore.session

    session = botocore.session.get_session()
    model = session.get_service_model(SERVICE)
    fields: dict[str, Any] = {}
    for name, where in FIELDS.items():
        operation, _, path = where.rpartition(":")
        operation = operation or OPERATION
        input_shape = model.operation_model(operation).input_shape
        shape, documentation = _resolve(input_shape, path)
        fields[name] = _describe(shape, f"{operation}.{path}", documentation)
    regions = {
        partition: sorted(session.get_available_regions(SERVICE, partition_name=partition))
        for partition in session.get_available_partitions()
    }
    return {
        "snapshot_date": date,
        "source": (
            f"botocore {botocore.__version__}: the {SERVICE} service model "
            f"(API version {model.api_version}), {OPERATION} and {TUNING} input shapes; Regions "
            "from botocore's endpoint data (Session.get_available_regions per partition)"
        ),
        "botocore_version": botocore.__version__,
        "api_version": model.api_version,
        "generated_by": "python -m smdist.catalog.snapshot",
        "fields": fields,
        "regions": {partition: names for partition, names in regions.items() if names},
    }


def render(snapshot: dict[str, Any]) -> str:
    return json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--date", default=datetime.date.today().isoformat())
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    args.output.write_text(render(build_snapshot(args.date)), encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
