"""The settings large jobs reach for, sent by SDK v2's estimator as the dry run shows them: for
each job below, the CreateTrainingJob request the estimator actually sends (captured from
boto3 on its way to the moto server) equals ``smdist submit --dry-run``'s, field for field.

- a job with retries, an infrastructure check, remote debugging, TensorBoard (not MLflow:
  SDK v2 cannot send it, ``test_v2_refusals.py``), an FSx for Lustre and an EFS channel, and
  its own volume size;
- heterogeneous clusters, for every strategy the training toolkit confines to instance groups,
  with channels routed to groups: the toolkit must get ``sagemaker_distribution_instance_groups``
  whichever path the SDK takes for the strategy;
- reserved capacity (a training plan) and an UltraServer placement.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conformance_cases import (
    HOROVOD_PT,
    PT,
    SMDDP,
    TRAINING_PLAN,
    capacity_cluster,
    conformance_job,
    file_system_settings,
    heterogeneous_job,
    tracking_settings,
)

from smdist.spec.job import JobSpec

from .conftest import BUCKET
from .test_conformance import submit_and_compare

GROUPS = "sagemaker_distribution_instance_groups"


def v2_tracking(bucket: str) -> dict[str, Any]:
    """Every tracking setting SDK v2 can send."""
    return {k: v for k, v in tracking_settings(bucket).items() if k != "mlflow"}


def test_tracking_file_systems_and_volume(boto_session, captured_requests):
    spec = conformance_job(
        "conf", BUCKET, "tracking", {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        PT, ("ml.g5.12xlarge", 2), **v2_tracking(BUCKET), **file_system_settings(BUCKET),
    )  # fmt: skip
    data = spec.model_dump(exclude_none=True)
    data["cluster"]["volume_size"] = 300
    data["inputs"]["lustre"]["input_mode"] = "File"  # the one mode a file system mounts in
    sent = submit_and_compare(JobSpec.from_dict(data), boto_session, captured_requests)
    assert sent["ResourceConfig"]["VolumeSizeInGB"] == 300
    assert sent["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert sent["InfraCheckConfig"] == {"EnableInfraCheck": True}
    assert sent["RemoteDebugConfig"] == {"EnableRemoteDebug": True}
    assert sent["TensorBoardOutputConfig"] == {
        "S3OutputPath": f"s3://{BUCKET}/tensorboard",
        "LocalPath": "/opt/ml/output/tensorboard",
    }
    assert "MlflowConfig" not in sent
    channels = {c["ChannelName"]: c for c in sent["InputDataConfig"]}
    assert channels["lustre"]["DataSource"]["FileSystemDataSource"] == {
        "FileSystemId": "fs-0123456789abcdef0",
        "FileSystemType": "FSxLustre",
        "DirectoryPath": "/abcdefgh/imagenet",
        "FileSystemAccessMode": "ro",
    }
    assert set(channels["lustre"]) == {"ChannelName", "DataSource"}  # File: the job's mode
    shared = channels["shared"]["DataSource"]["FileSystemDataSource"]
    assert (shared["FileSystemType"], shared["FileSystemAccessMode"]) == ("EFS", "rw")
    assert shared["DirectoryPath"] == "/datasets"
    assert list(channels["train"]["DataSource"]) == ["S3DataSource"]


def test_tensorboard_logs_go_under_the_job_by_default(boto_session, captured_requests):
    spec = conformance_job(
        "conf", BUCKET, "tensorboard", {"kind": "pytorch_ddp"}, PT, ("ml.g5.xlarge", 2),
        tensorboard={"local_path": "/opt/ml/output/tb"},
    )  # fmt: skip
    sent = submit_and_compare(spec, boto_session, captured_requests)
    name = sent["TrainingJobName"]
    assert sent["TensorBoardOutputConfig"] == {
        "S3OutputPath": f"s3://{BUCKET}/{name}/tensorboard",
        "LocalPath": "/opt/ml/output/tb",
    }


# Every strategy the training toolkit confines to the distribution groups, by the SDK's path:
# none (smdist's launcher), torch_distributed, MPI and smdistributed data parallelism.
HETEROGENEOUS = {
    "ddp-torchrun": ({"kind": "pytorch_ddp"}, PT, "ml.g5.xlarge"),
    "ddp-torch-distributed": (
        {"kind": "pytorch_ddp", "launcher": "torch_distributed"}, PT, "ml.g5.xlarge",
    ),
    "horovod": ({"kind": "horovod", "framework": "pytorch"}, HOROVOD_PT, "ml.g5.12xlarge"),
    "sddp": ({"kind": "sddp"}, SMDDP, "ml.p4d.24xlarge"),
}  # fmt: skip


def hetero_spec(name: str, strategy: dict, code: dict, gpu_type: str) -> JobSpec:
    data = heterogeneous_job("conf", BUCKET, f"hetero-{name}").model_dump(exclude_none=True)
    data["strategy"] = {**strategy, "instance_groups": ["gpu"]}
    data["code"] = code
    data["cluster"]["instance_groups"][1]["instance_type"] = gpu_type
    return JobSpec.from_dict(data)


@pytest.mark.parametrize("name", HETEROGENEOUS)
def test_heterogeneous_cluster(name, boto_session, captured_requests):
    sent = submit_and_compare(hetero_spec(name, *HETEROGENEOUS[name]), boto_session,
                              captured_requests)  # fmt: skip
    resources = sent["ResourceConfig"]
    assert "InstanceType" not in resources and "InstanceCount" not in resources
    assert [(g["InstanceGroupName"], g["InstanceCount"]) for g in resources["InstanceGroups"]] == [
        ("data", 1),
        ("gpu", 2),
    ]
    assert resources["VolumeSizeInGB"] == 200
    # the toolkit starts the strategy's runner on the gpu group's hosts only
    assert json.loads(sent["HyperParameters"][GROUPS]) == ["gpu"]
    routed = {
        c["ChannelName"]: c["DataSource"]["S3DataSource"]["InstanceGroupNames"]
        for c in sent["InputDataConfig"]
    }
    assert routed == {"raw": ["data"], "train": ["gpu"]}


def test_training_plan(boto_session, captured_requests):
    spec = conformance_job(
        "conf", BUCKET, "plan", {"kind": "pytorch_ddp", "launcher": "torch_distributed"}, PT,
        ("ml.p5.48xlarge", 2),
    )  # fmt: skip
    data = spec.model_dump(exclude_none=True)
    data["cluster"] = capacity_cluster("plan")
    sent = submit_and_compare(JobSpec.from_dict(data), boto_session, captured_requests)
    assert sent["ResourceConfig"] == {
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 500,
        "TrainingPlanArn": TRAINING_PLAN,
    }


def test_ultraserver_placement(boto_session, captured_requests):
    spec = conformance_job(
        "conf", BUCKET, "ultraserver", {"kind": "pytorch_ddp"}, {"framework_version": "2.8.0"},
        ("ml.p6e-gb200.36xlarge", 4),
    )  # fmt: skip
    data = spec.model_dump(exclude_none=True)
    data["cluster"] = capacity_cluster("ultraserver")
    sent = submit_and_compare(JobSpec.from_dict(data), boto_session, captured_requests)
    resources = sent["ResourceConfig"]
    assert resources["TrainingPlanArn"] == TRAINING_PLAN
    assert resources["InstancePlacementConfig"] == {
        "EnableMultipleJobs": False,
        "PlacementSpecifications": [{"InstanceCount": 4}],
    }
