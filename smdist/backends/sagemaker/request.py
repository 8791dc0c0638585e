"""The CreateTrainingJob request a Submission becomes, derived without calling AWS.

``smdist submit --dry-run`` prints this request; the tests check it against the request the
SageMaker SDK actually sends for the same Submission. Both read the Submission's
``estimator_kwargs`` and ``wire_hyperparameters``, so what a user is shown is what runs.
"""

from __future__ import annotations

from typing import Any

from smdist import catalog
from smdist.checks.catalog import unpinned_image
from smdist.checks.images import training_image_uri
from smdist.errors import Problem, SpecError
from smdist.planning.plan import Plan
from smdist.planning.submission import CODE_CHANNEL, TARBALL, Submission
from smdist.spec.job import JobSpec

SOURCE_PREFIX = "smdist/source"
DEFAULT_VOLUME_GB = 30  # the SDK's volume_size default
# Estimator arguments the backend adds to every job. The SDK's profiler and debugger hooks
# would add S3 output and an smdebug hook to the training process that the plan never showed;
# metric time series are turned on explicitly because the SDK leaves them off with image_uri.
BACKEND_ESTIMATOR_KWARGS: dict[str, Any] = {
    "disable_profiler": True,
    "debugger_hook_config": False,
    "enable_sagemaker_metrics": True,
}


def volume_fields(instance_type: str) -> dict[str, Any]:
    """ResourceConfig's ``VolumeSizeInGB`` for ``instance_type``: the SDKs' default, or nothing
    where the catalogue says SageMaker refuses the field (instance types with only instance
    storage: ``refused_request_fields``). SDK v2, v3 and tuning requests all take it from here.

    smdist states no volume size of its own: every request carried the SDKs' default, so leaving
    it out drops nothing a user set. A volume-size setting, if one is added, must be refused for
    these instance types, naming the field, never dropped: a user who asked for a size expects
    to get it or to be told why not."""
    if "VolumeSizeInGB" in catalog.refused_request_fields(instance_type):
        return {}
    return {"VolumeSizeInGB": DEFAULT_VOLUME_GB}


def source_uri(bucket: str, digest: str) -> str:
    """Where a bundle with this content digest lives: one object per distinct source."""
    return f"s3://{bucket}/{SOURCE_PREFIX}/{digest}/{TARBALL}"


def check_cloud_spec(spec: JobSpec) -> None:
    """What a real SageMaker job cannot take although the local backends can."""
    problems = local_only_problems(spec) + unpinned_image(spec)
    if problems:
        raise SpecError(problems)


def local_only_problems(spec: JobSpec) -> list[Problem]:
    """What marks a job as one for the local backends: a local-mode instance, local paths."""
    problems = []
    if spec.cluster.is_local_mode:
        problems.append(
            Problem(
                "cluster.instance_type",
                "is a local-mode instance type; real SageMaker jobs need an ml.* type",
                spec.cluster.instance_type,
                "an ml.* instance type, or backend 'sagemaker-local'",
            )
        )
    for name, channel in spec.inputs.items():
        if not channel.uri.startswith("s3://"):
            problems.append(
                Problem(
                    f"inputs.{name}.uri",
                    "SageMaker jobs read inputs from S3; file:// works with the local backends",
                    channel.uri,
                    "s3://bucket/prefix",
                )
            )
    if spec.output_path and not spec.output_path.startswith("s3://"):
        problems.append(
            Problem("output_path", "SageMaker jobs write to S3", spec.output_path, "s3://...")
        )
    return problems


def training_image(plan: Plan, region: str) -> str:
    """The job's training image: ``code.image_uri``, or the DLC URI from smdist's catalogue
    (``smdist.checks.images``), the same under SDK v2 and v3."""
    unpinned = unpinned_image(plan.spec)
    if unpinned:
        raise SpecError(unpinned)
    return training_image_uri(plan.spec, region)


def input_data_config(spec: JobSpec, code_uri: str) -> list[dict[str, Any]]:
    channels = []
    for name, channel in spec.inputs.items():
        entry: dict[str, Any] = {
            "DataSource": {
                "S3DataSource": {
                    "S3DataType": "S3Prefix",
                    "S3Uri": channel.uri,
                    "S3DataDistributionType": channel.distribution,
                }
            },
            "ChannelName": name,
        }
        if channel.input_mode:
            entry["InputMode"] = channel.input_mode
        channels.append(entry)
    if spec.network.isolation:
        channels.append(
            {
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": code_uri,
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "ChannelName": CODE_CHANNEL,
            }
        )
    return channels


def _algorithm_specification(kwargs: dict[str, Any], image: str) -> dict[str, Any]:
    algorithm: dict[str, Any] = {"TrainingInputMode": "File", "TrainingImage": image}
    if kwargs.get("metric_definitions"):
        algorithm["MetricDefinitions"] = kwargs["metric_definitions"]
    algorithm["EnableSageMakerMetricsTimeSeries"] = True
    return algorithm


def _output_data_config(kwargs: dict[str, Any], bucket: str) -> dict[str, Any]:
    output: dict[str, Any] = {"S3OutputPath": kwargs.get("output_path") or f"s3://{bucket}/"}
    if kwargs.get("output_kms_key"):
        output["KmsKeyId"] = kwargs["output_kms_key"]
    return output


def _resource_config(kwargs: dict[str, Any]) -> dict[str, Any]:
    resources: dict[str, Any] = {
        **volume_fields(kwargs["instance_type"]),
        "InstanceCount": kwargs["instance_count"],
        "InstanceType": kwargs["instance_type"],
    }
    if kwargs.get("volume_kms_key"):
        resources["VolumeKmsKeyId"] = kwargs["volume_kms_key"]
    if kwargs.get("keep_alive_period_in_seconds"):
        resources["KeepAlivePeriodInSeconds"] = kwargs["keep_alive_period_in_seconds"]
    return resources


def _stopping_condition(kwargs: dict[str, Any]) -> dict[str, Any]:
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": kwargs["max_run"]}
    if kwargs.get("max_wait"):
        stopping["MaxWaitTimeInSeconds"] = kwargs["max_wait"]
    return stopping


def _optional_fields(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The request's fields after InputDataConfig, in the SDK's order, where the job has them."""
    fields: dict[str, Any] = {}
    if kwargs.get("environment"):
        fields["Environment"] = dict(kwargs["environment"])
    if kwargs.get("tags"):
        fields["Tags"] = list(kwargs["tags"])
    if kwargs.get("subnets"):
        fields["VpcConfig"] = {
            "Subnets": list(kwargs["subnets"]),
            "SecurityGroupIds": list(kwargs.get("security_group_ids") or []),
        }
    for flag, key in (
        ("enable_network_isolation", "EnableNetworkIsolation"),
        ("encrypt_inter_container_traffic", "EnableInterContainerTrafficEncryption"),
        ("use_spot_instances", "EnableManagedSpotTraining"),
    ):
        if kwargs.get(flag):
            fields[key] = True
    if kwargs.get("checkpoint_s3_uri"):
        fields["CheckpointConfig"] = {
            "S3Uri": kwargs["checkpoint_s3_uri"],
            "LocalPath": kwargs.get("checkpoint_local_path") or "/opt/ml/checkpoints",
        }
    return fields


def create_training_job_request(submission: Submission, *, image: str) -> dict[str, Any]:
    """The CreateTrainingJob parameters of ``submission``."""
    spec, kwargs = submission.spec, submission.estimator_kwargs
    request: dict[str, Any] = {
        "TrainingJobName": submission.job_name,
        "AlgorithmSpecification": _algorithm_specification(kwargs, image),
        "RoleArn": kwargs.get("role") or "<role>",
        "OutputDataConfig": _output_data_config(kwargs, submission.bucket),
        "ResourceConfig": _resource_config(kwargs),
        "StoppingCondition": _stopping_condition(kwargs),
        "HyperParameters": dict(submission.wire_hyperparameters),
    }
    channels = input_data_config(spec, submission.code_uri)
    if channels:
        request["InputDataConfig"] = channels
    request.update(_optional_fields(kwargs))
    request["ProfilerConfig"] = {"DisableProfiler": True}
    return request
