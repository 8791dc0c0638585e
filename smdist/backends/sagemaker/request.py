"""The CreateTrainingJob request a Submission becomes through the training toolkit's route (SDK
v2's estimators, and every trial of a tuning job), derived without calling AWS.

``smdist submit --dry-run`` prints this request; the tests check it against the request the
SageMaker SDK actually sends for the same Submission. Both read the Submission's
``estimator_kwargs`` and ``wire_hyperparameters``, and the spec's settings as ``job_settings``
renders them for every line, so what a user is shown is what runs.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker import job_settings
from smdist.catalog import wire
from smdist.checks.catalog import unpinned_image
from smdist.checks.images import training_image_uri
from smdist.contract.groups import DISTRIBUTION_GROUPS
from smdist.errors import Problem, SpecError
from smdist.planning.plan import Plan
from smdist.planning.submission import CODE_CHANNEL, TARBALL, Submission
from smdist.spec.job import JobSpec

SOURCE_PREFIX = "smdist/source"
DEFAULT_VOLUME_GB = job_settings.DEFAULT_VOLUME_GB  # the SDK's volume_size default
# Estimator arguments the backend adds to every job. The SDK's profiler and debugger hooks
# would add S3 output and an smdebug hook to the training process that the plan never showed;
# metric time series are turned on explicitly because the SDK leaves them off with image_uri.
BACKEND_ESTIMATOR_KWARGS: dict[str, Any] = {
    "disable_profiler": True,
    "debugger_hook_config": False,
    "enable_sagemaker_metrics": True,
}


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
        if channel.file_system is None and not channel.uri.startswith("s3://"):
            problems.append(
                Problem(
                    f"inputs.{name}.uri",
                    "SageMaker jobs read inputs from S3 or a file system; file:// works with "
                    "the local backends",
                    channel.uri,
                    "s3://bucket/prefix, fsx://<id>/<mount name>/<path> or efs://<id>/<path>",
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
    """The user's channels (S3 prefixes on their instance groups, or file systems), then the
    code channel of a network-isolated job.

    A file system channel states no ``InputMode``: SDK v2's ``FileSystemInput`` takes none, and
    the one mode a file system is mounted in (``File``, ``checks.file_systems``) is the job's
    ``TrainingInputMode``, which the channel then takes."""
    channels = []
    for name, channel in spec.inputs.items():
        entry: dict[str, Any] = {
            "DataSource": job_settings.data_source(channel),
            "ChannelName": name,
        }
        if channel.input_mode and channel.file_system is None:
            entry["InputMode"] = channel.input_mode
        channels.append(entry)
    if spec.network.isolation:
        code: dict[str, Any] = {
            "S3DataType": "S3Prefix",
            "S3Uri": code_uri,
            "S3DataDistributionType": "FullyReplicated",
        }
        groups = job_settings.channels_on_groups(spec)
        if groups:  # SageMaker takes every channel on groups or none
            code["InstanceGroupNames"] = groups
        channels.append({"DataSource": {"S3DataSource": code}, "ChannelName": CODE_CHANNEL})
    return channels


def distribution_groups(spec: JobSpec) -> list[str]:
    """The instance groups that run the distributed program, in the cluster's order: the
    strategy's, or the first group (as ``Cluster`` derives its type and count); none without
    instance groups."""
    groups = [group.name for group in spec.cluster.instance_groups]
    named = getattr(spec.strategy, "instance_groups", [])  # only some strategies take groups
    return [name for name in groups if name in named] or groups[:1]


def group_hyperparameters(plan: Plan) -> dict[str, Any]:
    """What a job on instance groups adds to the toolkit's hyperparameters (before encoding).

    The training toolkit starts the strategy's runner on the hosts of
    ``sagemaker_distribution_instance_groups`` only, and the script once per host elsewhere;
    without it every group runs a distributed program of its own. SDK v2 writes it only for MPI
    and smdistributed data parallelism (``Framework._distribution_configuration``), not on
    PyTorch's torch_distributed path, so smdist sends it for every strategy. Where the SDK
    writes ``sagemaker_instance_type`` from its ``instance_type`` (the smdistributed path), that
    is None beside instance groups: the toolkit then reads each host's own type."""
    groups = distribution_groups(plan.spec)
    if not groups:
        return {}
    values: dict[str, Any] = {DISTRIBUTION_GROUPS: groups}
    if "smdistributed" in plan.distribution:
        values["sagemaker_instance_type"] = None
    return values


def hyperparameters(submission: Submission) -> dict[str, str]:
    """The request's HyperParameters: the Submission's wire values and the groups' own."""
    groups = wire.encode_hyperparameters(group_hyperparameters(submission.plan))
    return {**submission.wire_hyperparameters, **groups}


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


def _resource_config(spec: JobSpec, kwargs: dict[str, Any]) -> dict[str, Any]:
    cluster = spec.cluster
    resources: dict[str, Any] = {
        **job_settings.volume_fields(cluster),
        **job_settings.instance_fields(cluster),
    }
    if kwargs.get("volume_kms_key"):
        resources["VolumeKmsKeyId"] = kwargs["volume_kms_key"]
    if kwargs.get("keep_alive_period_in_seconds"):
        resources["KeepAlivePeriodInSeconds"] = kwargs["keep_alive_period_in_seconds"]
    resources.update(job_settings.capacity_fields(cluster))
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
        "ResourceConfig": _resource_config(spec, kwargs),
        "StoppingCondition": _stopping_condition(kwargs),
        "HyperParameters": hyperparameters(submission),
    }
    channels = input_data_config(spec, submission.code_uri)
    if channels:
        request["InputDataConfig"] = channels
    request.update(_optional_fields(kwargs))
    request["ProfilerConfig"] = {"DisableProfiler": True}
    request.update(job_settings.tracking_fields(spec, submission.bucket, submission.job_name))
    return request
