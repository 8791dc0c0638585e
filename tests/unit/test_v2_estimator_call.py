"""SDK v2's estimator call for the large-job settings, as plain values read from the dry-run
value's request (no SDK needed): instance groups and the distribution's group, storage,
capacity, retries, checks, remote debugging, TensorBoard and file system channels; and the
request's rules that the call relies on. ``tests/aws/test_conformance_settings.py`` proves the
estimator then sends the request, field for field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conformance_cases import (  # noqa: E402, I001
    PT,
    SMDDP,
    TRAINING_PLAN,
    capacity_cluster,
    conformance_job,
    file_system_settings,
    heterogeneous_job,
    tracking_settings,
)

from smdist.backends.sagemaker import request as request_  # noqa: E402
from smdist.backends.sagemaker import v2  # noqa: E402
from smdist.backends.sagemaker.dry_run_value import DryRun, dry_run  # noqa: E402
from smdist.backends.sagemaker.v2.estimator_call import estimator_call, resource_arguments  # noqa: E402
from smdist.planning.plan import plan  # noqa: E402
from smdist.spec.job import JobSpec  # noqa: E402

BUCKET = "smdist-unit-bucket"
ACCOUNT = {"bucket": BUCKET, "role": "arn:aws:iam::123456789012:role/R", "region": "us-west-2"}


def shown(spec: JobSpec) -> DryRun:
    return dry_run(plan(spec), v2.ROUTE, **ACCOUNT)


def hetero(strategy: dict[str, Any], code: dict[str, str], gpu_type: str) -> JobSpec:
    data = heterogeneous_job("unit", BUCKET).model_dump(exclude_none=True)
    data["strategy"] = {**strategy, "instance_groups": ["gpu"]}
    data["code"] = code
    data["cluster"]["instance_groups"][1]["instance_type"] = gpu_type
    return JobSpec.from_dict(data)


def test_instance_groups_replace_the_type_and_count():
    value = shown(heterogeneous_job("unit", BUCKET))
    call = estimator_call(value)
    assert call.arguments["instance_type"] is None and call.arguments["instance_count"] is None
    assert call.arguments["instance_groups"] == [
        {"instance_group_name": "data", "instance_type": "ml.c5.2xlarge", "instance_count": 1},
        {"instance_group_name": "gpu", "instance_type": "ml.g5.xlarge", "instance_count": 2},
    ]
    assert call.arguments["volume_size"] == 200
    # smdist's launcher: no distribution for the SDK; the toolkit's groups as a hyperparameter
    assert "distribution" not in call.arguments
    assert call.arguments["hyperparameters"]["sagemaker_distribution_instance_groups"] == ["gpu"]
    assert call.inputs["raw"]["instance_groups"] == ["data"]
    assert call.inputs["train"]["instance_groups"] == ["gpu"]


def test_the_distribution_names_its_group_and_the_toolkit_values_travel():
    value = shown(
        hetero({"kind": "pytorch_ddp", "launcher": "torch_distributed"}, PT, "ml.g5.xlarge")
    )
    arguments = estimator_call(value).arguments
    assert arguments["distribution"] == {
        "torch_distributed": {"enabled": True},
        "instance_groups": ["gpu"],
    }
    # PyTorch's torch_distributed path writes neither of these beside instance groups
    assert arguments["hyperparameters"]["sagemaker_instance_type"] == "ml.g5.xlarge"
    assert arguments["hyperparameters"]["sagemaker_distribution_instance_groups"] == ["gpu"]
    hyperparameters = value.request["HyperParameters"]
    assert hyperparameters["sagemaker_instance_type"] == '"ml.g5.xlarge"'


def test_smdistributed_sends_no_instance_type_beside_groups():
    # the SDK writes its own instance_type, None with groups; the toolkit reads each host's
    value = shown(hetero({"kind": "sddp"}, SMDDP, "ml.p4d.24xlarge"))
    assert value.request["HyperParameters"]["sagemaker_instance_type"] == "null"
    assert json.loads(
        value.request["HyperParameters"]["sagemaker_distribution_instance_groups"]
    ) == ["gpu"]


def test_tracking_settings_and_file_systems():
    settings = {k: v for k, v in tracking_settings(BUCKET).items() if k != "mlflow"}
    spec = conformance_job(
        "unit", BUCKET, "tracking", {"kind": "pytorch_ddp"}, PT, ("ml.g5.12xlarge", 2),
        **settings, **file_system_settings(BUCKET),
    )  # fmt: skip
    call = estimator_call(shown(spec))
    assert call.arguments["max_retry_attempts"] == 3
    assert call.arguments["enable_infra_check"] is True
    assert call.arguments["enable_remote_debug"] is True
    assert call.arguments["tensorboard_output_config"] == {
        "s3_output_path": f"s3://{BUCKET}/tensorboard",
        "container_local_output_path": "/opt/ml/output/tensorboard",
    }
    assert call.arguments["volume_size"] == 30  # the SDKs' default, stated
    assert call.inputs["shared"] == {
        "file_system_id": "fs-0fedcba9876543210",
        "file_system_type": "EFS",
        "directory_path": "/datasets",
        "file_system_access_mode": "rw",
    }
    assert list(call.inputs) == ["train", "lustre", "shared"]  # the request's channel order


def test_capacity_arguments():
    code = {"framework_version": "2.8.0"}
    spec = conformance_job(
        "unit", BUCKET, "ultra", {"kind": "pytorch_ddp"}, code, ("ml.p6e-gb200.36xlarge", 4)
    )
    data = spec.model_dump(exclude_none=True)
    data["cluster"] = capacity_cluster("ultraserver")
    arguments = estimator_call(shown(JobSpec.from_dict(data))).arguments
    assert arguments["training_plan"] == TRAINING_PLAN
    assert arguments["instance_placement_config"] == {
        "EnableMultipleJobs": False,
        "PlacementSpecifications": [{"InstanceCount": 4}],
    }


def test_a_resource_field_with_no_argument_fails_loudly():
    # instance preferences are refused before any call is made (v2.carriage): reaching the
    # call would be a bug in smdist, never a setting dropped
    with pytest.raises(AssertionError, match="InstancePreferences"):
        resource_arguments({"InstancePreferences": [{"InstanceType": "ml.p5.48xlarge"}]})


def test_a_file_system_channel_takes_the_jobs_input_mode():
    data = conformance_job(
        "unit", BUCKET, "fs", {"kind": "pytorch_ddp"}, PT, ("ml.g5.xlarge", 2),
        **file_system_settings(BUCKET),
    ).model_dump(exclude_none=True)  # fmt: skip
    data["inputs"]["lustre"]["input_mode"] = "File"
    spec = JobSpec.from_dict(data)
    channels = request_.input_data_config(spec, "s3://x/code")
    assert "InputMode" not in channels[1]  # FileSystemInput takes none: File, the job's mode
    assert request_.local_only_problems(spec) == []  # fsx:// and efs:// are SageMaker's
