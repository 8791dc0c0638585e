"""The settings large jobs reach for, in the SDK v3 request and its driver choice, without the
SDK (tests/aws_v3 compares the same requests with what ModelTrainer.train() sends): instance
groups, capacity, file systems, volume size, retries, checks, remote debugging, TensorBoard,
MLflow; and what v3 cannot carry, refused with the field named."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from smdist.errors import SpecError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conformance_cases import (  # noqa: E402, I001
    MLFLOW_SERVER,
    PT,
    TRAINING_PLAN,
    capacity_cluster,
    conformance_job,
    file_system_settings,
    heterogeneous_job,
    tracking_settings,
)

from smdist.backends.sagemaker.v3 import request as v3_request  # noqa: E402
from smdist.backends.sagemaker.v3.driver_config import DISTRIBUTION_GROUPS  # noqa: E402
from smdist.planning.plan import Plan, plan  # noqa: E402
from smdist.spec.job import JobSpec  # noqa: E402

BUCKET = "smdist-unit-bucket"
ROLE = "arn:aws:iam::123456789012:role/R"


def request_of(job_plan: Plan, job_name: str = "v3-unit-1") -> dict[str, Any]:
    submission = job_plan.bind(
        job_name=job_name, region="us-west-2", bucket=BUCKET, role=ROLE,
        code_uri=f"s3://{BUCKET}/smdist/source/abc/sourcedir.tar.gz",
    )  # fmt: skip
    return v3_request.create_training_job_request(
        submission, image="img", drivers=f"s3://{BUCKET}/d", metric_definitions=[]
    )


def on_cluster(cluster: dict, strategy: dict | None = None, **more: Any) -> Plan:
    spec = conformance_job("v3u", BUCKET, "settings", strategy or {"kind": "pytorch_ddp"}, PT,
                           ("ml.p3.2xlarge", 2), **more)  # fmt: skip
    return plan(JobSpec.from_dict({**spec.model_dump(exclude_unset=True), "cluster": cluster}))


def hetero(strategy: dict) -> Plan:
    spec = heterogeneous_job("v3u", BUCKET)
    return plan(JobSpec.from_dict({**spec.model_dump(exclude_unset=True), "strategy": strategy}))


@pytest.mark.parametrize(
    "strategy",
    [
        {"kind": "pytorch_ddp", "instance_groups": ["gpu"]},
        {"kind": "pytorch_ddp", "launcher": "torch_distributed", "instance_groups": ["gpu"]},
    ],
    ids=["torchrun", "torch_distributed"],
)
def test_a_heterogeneous_ddp_job_runs_smdists_driver_told_its_groups(strategy):
    job_plan = hetero(strategy)
    config = v3_request.plan_driver_config(job_plan)
    # v3's Torchrun driver starts torchrun on every host of SM_HOSTS, the data group's too.
    assert config.smdist and config.name == "SmdistDriver"
    assert json.loads(config.settings["toolkit_hyperparameters"][DISTRIBUTION_GROUPS]) == ["gpu"]
    assert config.settings["process_count_per_node"] == job_plan.launch.processes_per_host
    # The same job on one instance type keeps v3's own Torchrun driver.
    plain = on_cluster({"instance_type": "ml.g5.xlarge", "instance_count": 2}, strategy={
        k: v for k, v in strategy.items() if k != "instance_groups"
    })  # fmt: skip
    assert v3_request.plan_driver_config(plain).name == "Torchrun"


def test_a_heterogeneous_request_puts_code_and_drivers_on_every_group():
    request = request_of(hetero({"kind": "pytorch_ddp", "instance_groups": ["gpu"]}))
    resources = request["ResourceConfig"]
    assert "InstanceType" not in resources and "InstanceCount" not in resources
    assert [g["InstanceGroupName"] for g in resources["InstanceGroups"]] == ["data", "gpu"]
    assert resources["VolumeSizeInGB"] == 200
    groups = {c["ChannelName"]: c["DataSource"]["S3DataSource"]["InstanceGroupNames"]
              for c in request["InputDataConfig"]}  # fmt: skip
    assert groups == {"raw": ["data"], "train": ["gpu"], "code": ["data", "gpu"],
                      "sm_drivers": ["data", "gpu"]}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("plan", {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2, "VolumeSizeInGB": 500,
                  "TrainingPlanArn": TRAINING_PLAN}),
        ("preferences", {"InstancePreferences": [
            {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2,
             "TrainingPlanArns": [TRAINING_PLAN]},
            {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}], "VolumeSizeInGB": 30}),
        ("ultraserver", {"InstanceType": "ml.p6e-gb200.36xlarge", "InstanceCount": 4,
                         "VolumeSizeInGB": 30, "TrainingPlanArn": TRAINING_PLAN,
                         "InstancePlacementConfig": {
                             "PlacementSpecifications": [{"InstanceCount": 4}]}}),
    ],
)  # fmt: skip
def test_capacity_reaches_the_resource_config_as_v3_serializes_it(kind, expected):
    job_plan = on_cluster(capacity_cluster(kind))
    assert request_of(job_plan)["ResourceConfig"] == expected
    assert v3_request.carriage_problems(job_plan) == []


def test_enable_multiple_jobs_is_sent_when_true_and_ultraserver_ids_as_given():
    cluster = {
        "instance_type": "ml.p6e-gb200.36xlarge",
        "instance_count": 4,
        "placement": {"ultraservers": [{"instance_count": 4, "ultra_server_id": "us-1"}],
                      "multiple_jobs": True},
    }  # fmt: skip
    placement = request_of(on_cluster(cluster))["ResourceConfig"]["InstancePlacementConfig"]
    assert placement == {
        "EnableMultipleJobs": True,
        "PlacementSpecifications": [{"UltraServerId": "us-1", "InstanceCount": 4}],
    }


def test_tracking_file_systems_and_volume_size_reach_the_request():
    job_plan = on_cluster({"instance_type": "ml.p3.2xlarge", "instance_count": 2,
                           "volume_size": 300},
                          **tracking_settings(BUCKET), **file_system_settings(BUCKET))  # fmt: skip
    request = request_of(job_plan)
    assert request["ResourceConfig"]["VolumeSizeInGB"] == 300
    assert request["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert request["InfraCheckConfig"] == {"EnableInfraCheck": True}
    assert request["RemoteDebugConfig"] == {"EnableRemoteDebug": True}
    assert request["TensorBoardOutputConfig"]["S3OutputPath"] == f"s3://{BUCKET}/tensorboard"
    assert request["MlflowConfig"]["MlflowResourceArn"] == MLFLOW_SERVER
    sources = {c["ChannelName"]: c["DataSource"] for c in request["InputDataConfig"]}
    assert sources["lustre"]["FileSystemDataSource"]["FileSystemType"] == "FSxLustre"
    assert sources["shared"]["FileSystemDataSource"]["FileSystemAccessMode"] == "rw"
    assert "InstanceGroupNames" not in sources["code"]["S3DataSource"]  # no groups here


def test_tensorboard_without_a_uri_goes_under_the_jobs_name():
    job_plan = on_cluster({"instance_type": "ml.p3.2xlarge", "instance_count": 2},
                          tensorboard={})  # fmt: skip
    request = request_of(job_plan, job_name="job-7")
    assert request["TensorBoardOutputConfig"] == {
        "LocalPath": "/opt/ml/output/tensorboard",
        "S3OutputPath": f"s3://{BUCKET}/job-7/tensorboard",
    }


PREFERENCES = [
    {"instance_type": "ml.p5.48xlarge", "instance_count": 2},
    {"instance_type": "ml.p4d.24xlarge", "instance_count": 2},
]
ULTRASERVERS = [{"instance_type": "ml.p6e-gb200.36xlarge", "instance_count": 4}]


@pytest.mark.parametrize(
    ("field", "cluster", "more"),
    [
        ("spot.enabled", {"instance_preferences": PREFERENCES}, {"spot": {"enabled": True}}),
        ("cluster.instance_preferences", {"instance_preferences": PREFERENCES * 2}, {}),
        ("cluster.placement", {"instance_preferences": ULTRASERVERS,
                               "placement": {"ultraservers": [{"instance_count": 4}]}}, {}),
    ],
    ids=["spot", "repeated-type", "placement"],
)  # fmt: skip
def test_what_v3s_compute_refuses_is_refused_by_the_plan_naming_the_field(field, cluster, more):
    """CreateTrainingJob refuses these as v3's Compute does: every SDK line's plan refuses
    them first (smdist.checks.capacity), so no request is ever rendered."""
    with pytest.raises(SpecError) as raised:
        on_cluster(cluster, **more)
    (problem,) = [p for p in raised.value.problems if p.path == field]
    assert "instance_preferences" in str(problem) and problem.valid
