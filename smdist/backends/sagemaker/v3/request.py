"""The CreateTrainingJob request SDK v3's ``ModelTrainer.train()`` sends, rendered from a
Submission (a plan bound to one job), as SDK v2's is (``request``).

Pure: no SDK import and no AWS call, so ``smdist submit --dry-run`` shows it in milliseconds
and the SageMaker backend sends exactly what it showed. What makes it v3's and not v2's:

- the container runs ``/bin/bash -c "... sm_train.sh"`` (``ContainerEntrypoint`` /
  ``ContainerArguments``), not the image's training toolkit;
- the code travels as channel ``code`` (smdist's content-addressed tarball) and the drivers as
  channel ``sm_drivers`` (content-addressed too: ``smdist/drivers/<digest>/``);
- hyperparameters are the user's only, encoded so that the script gets what SDK v2's toolkit
  gives it (``v3_hyperparameters``: not v3's raw strings, which its drivers re-decode), plus
  ``mp_parameters`` for SMP; no ``sagemaker_*`` keys;
- ``OutputDataConfig`` gains ``CompressionType: GZIP``;
- where a user channel names instance groups, the code and drivers channels go to every group
  (v3's ``_resolve_managed_channel_instance_groups``);
- a shape's false fields are left out, as v3's serializer leaves them out
  (``InstancePlacementConfig.EnableMultipleJobs``).

The settings large jobs reach for (instances, volume, capacity, file system channels, retries,
checks, remote debugging, TensorBoard, MLflow) are rendered once for every line by
``job_settings``; this module places them where v3 sends them. What v3 cannot carry is a
Problem before any AWS call (``carriage``).

What smdist sets on every job under either SDK, and ``ModelTrainer`` has no setting for:
``ProfilerConfig: {DisableProfiler: true}`` and ``EnableSageMakerMetricsTimeSeries: true``
(``MetricDefinitions`` too, which it does take). The ModelTrainer ``smdist.model_trainer``
returns adds the same two fields (``v3.trainer_class``), so its ``train()`` sends them too, and
the job's ``MlflowConfig``, which ModelTrainer has no setting for either.

Which v3 driver starts the job, and with what settings, is ``driver_config``'s.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import Any

from smdist.backends.sagemaker import job_settings
from smdist.backends.sagemaker.v3 import hyperparameters as v3_hyperparameters
from smdist.backends.sagemaker.v3.carriage import carriage_problems
from smdist.backends.sagemaker.v3.driver_config import (
    SMDIST_DRIVER_SCRIPT,
    TORCHRUN_DRIVER_SCRIPT,
    DriverConfig,
    driver_config,
    plan_driver_config,
    smp_v2_parameters,
)
from smdist.errors import SpecError
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission
from smdist.spec.job import JobSpec

CODE_CHANNEL = "code"
DRIVERS_CHANNEL = "sm_drivers"
CONTAINER_DRIVERS = "/opt/ml/input/data/sm_drivers"
ENTRYPOINT = ["/bin/bash"]
ARGUMENTS = [
    "-c",
    f"chmod +x {CONTAINER_DRIVERS}/sm_train.sh && {CONTAINER_DRIVERS}/sm_train.sh",
]
# What smdist sets on every job, as the SDK v2 path does (request.BACKEND_ESTIMATOR_KWARGS):
# no SageMaker Debugger profiling (no profiler output in S3, no profiler rule jobs) and metric
# time series for the `[metrics]` lines. v3 sends no DebugHookConfig, as v2 with
# debugger_hook_config=False does not.
EVERY_JOB_ALGORITHM: dict[str, Any] = {"EnableSageMakerMetricsTimeSeries": True}
EVERY_JOB_REQUEST: dict[str, Any] = {"ProfilerConfig": {"DisableProfiler": True}}


def hyperparameters(plan: Plan) -> dict[str, str]:
    """The request's HyperParameters; SpecError for what v3's container cannot carry."""
    problems = carriage_problems(plan)
    if problems:
        raise SpecError(problems)
    smdist_driver = plan_driver_config(plan).smdist
    values = v3_hyperparameters.encode(plan.hyperparameters, smdist_driver=smdist_driver)
    launch = plan.launch
    if launch.mp_parameters:
        # SMP v2: v3's own SMP settings; v1 reads SM_HP_MP_PARAMETERS, as under the toolkit.
        smp = smp_v2_parameters(launch)
        values["mp_parameters"] = json.dumps(launch.mp_parameters if smp is None else smp)
    return dict(sorted(values.items()))  # the toolkit sorts the arguments by name


def drivers_digest(plan: Plan, sdk_version: str, code_uri: str) -> str:
    """What names the drivers' S3 prefix: the SDK's drivers, smdist's, and this job's settings
    and code (sm_train.sh, sourcecode.json and distributed.json are rendered from them)."""
    try:
        smdist_version = metadata.version("smdist")
    except metadata.PackageNotFoundError:  # a source tree on the path, not installed
        smdist_version = "source"
    config = plan_driver_config(plan)
    identity = {
        "sdk": sdk_version,
        "code": code_uri,
        "smdist": smdist_version,
        "driver": [config.name, config.script, config.settings],
        "entry_script": plan.entry_point,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def drivers_uri(bucket: str, digest: str) -> str:
    return f"s3://{bucket}/smdist/drivers/{digest}"


def _channel(name: str, uri: str, groups: list[str] | None) -> dict[str, Any]:
    """A channel v3 adds (code, drivers): on every instance group where a user channel names
    groups (``job_settings.channels_on_groups``)."""
    source: dict[str, Any] = {
        "S3DataType": "S3Prefix",
        "S3Uri": uri,
        "S3DataDistributionType": "FullyReplicated",
    }
    if groups is not None:
        source["InstanceGroupNames"] = list(groups)
    return {"ChannelName": name, "DataSource": {"S3DataSource": source}, "InputMode": "File"}


def _algorithm_specification(
    image: str, metric_definitions: list[dict[str, str]]
) -> dict[str, Any]:
    algorithm: dict[str, Any] = {"TrainingInputMode": "File", "TrainingImage": image}
    if metric_definitions:
        algorithm["MetricDefinitions"] = metric_definitions
    algorithm.update(EVERY_JOB_ALGORITHM)
    algorithm["ContainerEntrypoint"] = list(ENTRYPOINT)
    algorithm["ContainerArguments"] = list(ARGUMENTS)
    return algorithm


def _resource_config(spec: JobSpec) -> dict[str, Any]:
    cluster = spec.cluster
    resources: dict[str, Any] = {
        **job_settings.instance_fields(cluster),
        **job_settings.volume_fields(cluster),
    }
    if spec.kms and spec.kms.volume_key_id:
        resources["VolumeKmsKeyId"] = spec.kms.volume_key_id
    if spec.keep_alive:
        resources["KeepAlivePeriodInSeconds"] = spec.keep_alive
    capacity = job_settings.capacity_fields(cluster)
    placement = capacity.pop("InstancePlacementConfig", {})
    # v3 serializes a shape without its false fields: EnableMultipleJobs false (the API's
    # default) is left out, and a placement left empty with it.
    placement = {k: v for k, v in placement.items() if v}
    if placement:
        capacity["InstancePlacementConfig"] = placement
    return {**resources, **capacity}


def _stopping_condition(spec: JobSpec) -> dict[str, Any]:
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": spec.max_run}
    if spec.spot.enabled:
        stopping["MaxWaitTimeInSeconds"] = spec.spot.max_wait or spec.max_run
    return stopping


def _output_data_config(spec: JobSpec, bucket: str) -> dict[str, Any]:
    output: dict[str, Any] = {"S3OutputPath": spec.output_path or f"s3://{bucket}/"}
    if spec.kms and spec.kms.output_key_id:
        output["KmsKeyId"] = spec.kms.output_key_id
    output["CompressionType"] = "GZIP"
    return output


def _channels(spec: JobSpec, code_uri: str, drivers: str) -> list[dict[str, Any]]:
    """The user's channels (S3 or a file system); code and drivers always come last."""
    channels = []
    for name, channel in spec.inputs.items():
        entry: dict[str, Any] = {
            "ChannelName": name,
            "DataSource": job_settings.data_source(channel),
        }
        if channel.input_mode:
            entry["InputMode"] = channel.input_mode
        channels.append(entry)
    groups = job_settings.channels_on_groups(spec)
    return channels + [
        _channel(CODE_CHANNEL, code_uri, groups),
        _channel(DRIVERS_CHANNEL, drivers, groups),
    ]


def _optional_fields(submission: Submission) -> dict[str, Any]:
    """The request's fields after StoppingCondition, in v3's order, where the job has them."""
    plan = submission.plan
    spec, network = plan.spec, plan.spec.network
    fields: dict[str, Any] = {}
    if network.subnets:
        fields["VpcConfig"] = {
            "SecurityGroupIds": list(network.security_group_ids),
            "Subnets": list(network.subnets),
        }
    if spec.tags:
        fields["Tags"] = [{"Key": k, "Value": v} for k, v in spec.tags.items()]
    if spec.checkpoint is not None and spec.checkpoint.s3_uri:
        fields["CheckpointConfig"] = {
            "S3Uri": spec.checkpoint.s3_uri,
            "LocalPath": spec.checkpoint.local_path or "/opt/ml/checkpoints",
        }
    if plan.environment:
        fields["Environment"] = dict(plan.environment)
    if spec.spot.enabled:
        fields["EnableManagedSpotTraining"] = True
    if network.encrypt_inter_container_traffic:
        fields["EnableInterContainerTrafficEncryption"] = True
    if network.isolation:
        fields["EnableNetworkIsolation"] = True
    # Retries, infrastructure checks, remote debugging, TensorBoard (ModelTrainer's with_*) and
    # MLflow (smdist's ModelTrainer adds it: v3 has no setting for it).
    fields.update(job_settings.tracking_fields(spec, submission.bucket, submission.job_name))
    return fields


def create_training_job_request(
    submission: Submission,
    *,
    image: str,
    drivers: str,
    metric_definitions: list[dict[str, str]],
) -> dict[str, Any]:
    """The request, field for field as v3 sends it for this submission, with the drivers under
    ``drivers``."""
    plan, code_uri, spec = submission.plan, submission.code_uri, submission.plan.spec
    algorithm = _algorithm_specification(image, metric_definitions)
    resources, stopping = _resource_config(spec), _stopping_condition(spec)
    output = _output_data_config(spec, submission.bucket)
    channels = _channels(spec, code_uri, drivers)
    request: dict[str, Any] = {
        "TrainingJobName": submission.job_name,
        "HyperParameters": hyperparameters(plan),
        "AlgorithmSpecification": algorithm,
        "RoleArn": submission.role,
        "InputDataConfig": channels,
        "OutputDataConfig": output,
        "ResourceConfig": resources,
        "StoppingCondition": stopping,
        **_optional_fields(submission),
    }
    request.update(EVERY_JOB_REQUEST)
    return request


__all__ = [
    "ARGUMENTS",
    "CODE_CHANNEL",
    "CONTAINER_DRIVERS",
    "DRIVERS_CHANNEL",
    "ENTRYPOINT",
    "EVERY_JOB_ALGORITHM",
    "EVERY_JOB_REQUEST",
    "SMDIST_DRIVER_SCRIPT",
    "TORCHRUN_DRIVER_SCRIPT",
    "DriverConfig",
    "carriage_problems",
    "create_training_job_request",
    "driver_config",
    "drivers_digest",
    "drivers_uri",
    "hyperparameters",
    "plan_driver_config",
    "smp_v2_parameters",
]
