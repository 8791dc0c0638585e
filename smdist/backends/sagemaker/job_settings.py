"""The CreateTrainingJob fields of the settings large jobs reach for, from the spec: storage,
heterogeneous groups, capacity (training plans, preferences, UltraServer placement), file system
channels, retries, infrastructure checks, remote debugging, TensorBoard and MLflow.

One renderer for both SDK lines and tuning (each request module places these values where its
SDK puts them); pure: no SDK import, no AWS call.
"""

from __future__ import annotations

from typing import Any

from smdist import catalog
from smdist.spec.cluster import Cluster
from smdist.spec.job import JobSpec
from smdist.spec.sections import Input

DEFAULT_VOLUME_GB = 30  # the SDKs' volume_size default
TENSORBOARD_PREFIX = "tensorboard"


def instance_types(cluster: Cluster) -> list[str]:
    """Every instance type the request names: the groups', the preferences', or the one."""
    if cluster.instance_groups:
        return [group.instance_type for group in cluster.instance_groups]
    if cluster.instance_preferences:
        return [choice.instance_type for choice in cluster.instance_preferences]
    return [cluster.instance_type or ""]


def volume_refused_by(cluster: Cluster) -> list[str]:
    """The job's instance types on which SageMaker refuses ``VolumeSizeInGB``."""
    return [
        t for t in instance_types(cluster) if "VolumeSizeInGB" in catalog.refused_request_fields(t)
    ]


def volume_fields(cluster: Cluster) -> dict[str, Any]:
    """ResourceConfig's ``VolumeSizeInGB``: ``cluster.volume_size``, else the SDKs' default; left
    out where the catalogue says SageMaker refuses the field on one of the job's types
    (``refused_request_fields``). A volume_size stated there is refused by the checks
    (``smdist.checks.capacity``), never dropped here."""
    if volume_refused_by(cluster):
        return {}
    return {"VolumeSizeInGB": cluster.volume_size or DEFAULT_VOLUME_GB}


def instance_fields(cluster: Cluster) -> dict[str, Any]:
    """The instances: ``InstanceType``/``InstanceCount``, or ``InstanceGroups``, or
    ``InstancePreferences`` (in the order the user gave them)."""
    if cluster.instance_groups:
        return {
            "InstanceGroups": [
                {
                    "InstanceType": group.instance_type,
                    "InstanceCount": group.instance_count,
                    "InstanceGroupName": group.name,
                }
                for group in cluster.instance_groups
            ]
        }
    if cluster.instance_preferences:
        preferences = []
        for choice in cluster.instance_preferences:
            entry: dict[str, Any] = {
                "InstanceType": choice.instance_type,
                "InstanceCount": choice.instance_count,
            }
            if choice.training_plan is not None:
                entry["TrainingPlanArns"] = [choice.training_plan]
            preferences.append(entry)
        return {"InstancePreferences": preferences}
    return {"InstanceType": cluster.instance_type, "InstanceCount": cluster.instance_count}


def capacity_fields(cluster: Cluster) -> dict[str, Any]:
    """``TrainingPlanArn`` and ``InstancePlacementConfig``, where the job states them."""
    fields: dict[str, Any] = {}
    if cluster.training_plan is not None:
        fields["TrainingPlanArn"] = cluster.training_plan
    if cluster.placement is not None:
        placement: dict[str, Any] = {"EnableMultipleJobs": cluster.placement.multiple_jobs}
        if cluster.placement.ultraservers:
            placement["PlacementSpecifications"] = [
                {
                    **({"UltraServerId": s.ultra_server_id} if s.ultra_server_id else {}),
                    "InstanceCount": s.instance_count,
                }
                for s in cluster.placement.ultraservers
            ]
        fields["InstancePlacementConfig"] = placement
    return fields


def data_source(channel: Input) -> dict[str, Any]:
    """A channel's ``DataSource``: an S3 prefix (on its instance groups) or a file system."""
    file_system = channel.file_system
    if file_system is not None:
        return {
            "FileSystemDataSource": {
                "FileSystemId": file_system.id,
                "FileSystemAccessMode": file_system.access_mode,
                "FileSystemType": file_system.type,
                "DirectoryPath": file_system.directory_path,
            }
        }
    source: dict[str, Any] = {
        "S3DataType": "S3Prefix",
        "S3Uri": channel.uri,
        "S3DataDistributionType": channel.distribution,
    }
    if channel.instance_groups:
        source["InstanceGroupNames"] = list(channel.instance_groups)
    return {"S3DataSource": source}


def channels_on_groups(spec: JobSpec) -> list[str] | None:
    """Every group's name where any user channel is routed to groups: SageMaker takes all
    channels on groups or none, so channels smdist adds (code, drivers) go to every group, as
    SDK v3 assigns its own (``ModelTrainer._resolve_managed_channel_instance_groups``)."""
    if any(channel.instance_groups for channel in spec.inputs.values()):
        return [group.name for group in spec.cluster.instance_groups]
    return None


def tensorboard_uri(spec: JobSpec, bucket: str | None, job_name: str) -> str:
    """Where TensorBoard logs go: ``tensorboard.s3_uri``, or the job's own prefix."""
    assert spec.tensorboard is not None
    return spec.tensorboard.s3_uri or f"s3://{bucket}/{job_name}/{TENSORBOARD_PREFIX}"


def tracking_fields(spec: JobSpec, bucket: str | None, job_name: str) -> dict[str, Any]:
    """``RetryStrategy``, ``InfraCheckConfig``, ``RemoteDebugConfig``,
    ``TensorBoardOutputConfig`` and ``MlflowConfig``, where the job states them."""
    fields: dict[str, Any] = {}
    if spec.retry is not None:
        fields["RetryStrategy"] = {"MaximumRetryAttempts": spec.retry.max_attempts}
    if spec.infra_check:
        fields["InfraCheckConfig"] = {"EnableInfraCheck": True}
    if spec.remote_debug:
        fields["RemoteDebugConfig"] = {"EnableRemoteDebug": True}
    if spec.tensorboard is not None:
        fields["TensorBoardOutputConfig"] = {
            "LocalPath": spec.tensorboard.local_path,
            "S3OutputPath": tensorboard_uri(spec, bucket, job_name),
        }
    if spec.mlflow is not None:
        mlflow: dict[str, Any] = {"MlflowResourceArn": spec.mlflow.tracking_server_arn}
        if spec.mlflow.experiment:
            mlflow["MlflowExperimentName"] = spec.mlflow.experiment
        if spec.mlflow.run_name:
            mlflow["MlflowRunName"] = spec.mlflow.run_name
        fields["MlflowConfig"] = mlflow
    return fields
