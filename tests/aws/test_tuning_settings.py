"""A tuning job's trials take the large-job settings its training-job definition has a place for,
and refuse, naming the field, those it has none for.

HyperParameterTrainingJobDefinition takes CreateTrainingJob's ``ResourceConfig`` shape whole
(instance groups, training plans, preferences, placement, the volume) and its
``RetryStrategy``; it has no ``TensorBoardOutputConfig``, ``InfraCheckConfig``,
``RemoteDebugConfig`` or ``MlflowConfig``. Every definition here is what botocore's model
accepts, what moto receives is the dry run's request, and the trials' resources, channels and
static hyperparameters are submit's (the toolkit's route) for the same job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conformance_cases import (
    MLFLOW_SERVER,
    PT,
    TRAINING_PLAN,
    capacity_cluster,
    heterogeneous_job,
)
from moto_server import capture_calls, unreachable_aws

from smdist.backends import sagemaker as backend
from smdist.backends.sagemaker import tuning
from smdist.cli.app import main
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE

ACCOUNT = {"bucket": BUCKET, "role": ROLE, "region": REGION}
SEARCH = {
    "objective": {"metric": "train:loss", "type": "Minimize"},
    "parameters": {"learning_rate": {"type": "continuous", "min": 0.001, "max": 0.1}},
    "max_jobs": 4,
    "max_parallel_jobs": 2,
}


def searched(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "tuning": SEARCH, "max_run": 3600}


def job(**more: Any) -> dict[str, Any]:
    return searched(
        {
            "name": "tuned",
            "strategy": {"kind": "pytorch_ddp"},
            "cluster": {"instance_type": "ml.p5.48xlarge", "instance_count": 2},
            "code": PT,
            **more,
        }
    )


def botocore_problems(operation: str, params: dict[str, Any]) -> str:
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    return report.generate_report() if report.has_errors() else ""


def sent_as_shown(data: dict[str, Any], boto_session) -> dict[str, Any]:
    """The definition moto receives (the dry run's), checked against botocore's model."""
    captured = capture_calls(boto_session, "CreateHyperParameterTuningJob")
    job_plan = plan(JobSpec.from_dict(data))
    sent = tuning.launch(job_plan, **ACCOUNT, boto_session=boto_session)
    shown = tuning.dry_run(job_plan, **ACCOUNT).renamed(sent.name)
    assert captured == [shown.request]
    assert botocore_problems("CreateHyperParameterTuningJob", shown.request) == ""
    return shown.request["TrainingJobDefinition"]


def submitted(data: dict[str, Any]) -> dict[str, Any]:
    """submit's CreateTrainingJob for the same job without its search."""
    fixed = JobSpec.from_dict({k: v for k, v in data.items() if k != "tuning"})
    return backend.dry_run(plan(fixed), **ACCOUNT).request


def test_heterogeneous_trials_with_retries(boto_session):
    data = searched(heterogeneous_job("tuned", BUCKET).model_dump(exclude_none=True))
    data["retry"] = {"max_attempts": 2}
    definition = sent_as_shown(data, boto_session)
    training = submitted(data)
    assert definition["ResourceConfig"] == training["ResourceConfig"]
    assert [g["InstanceGroupName"] for g in definition["ResourceConfig"]["InstanceGroups"]] == [
        "data",
        "gpu",
    ]
    assert definition["InputDataConfig"] == training["InputDataConfig"]
    assert definition["RetryStrategy"] == {"MaximumRetryAttempts": 2}
    static = definition["StaticHyperParameters"]
    assert json.loads(static["sagemaker_distribution_instance_groups"]) == ["gpu"]


@pytest.mark.parametrize("kind", ["plan", "preferences", "ultraserver"])
def test_capacity_reaches_the_trials(kind, boto_session):
    data = job(cluster=capacity_cluster(kind))
    if kind == "ultraserver":
        data["code"] = {"framework_version": "2.8.0"}
    resources = sent_as_shown(data, boto_session)["ResourceConfig"]
    if kind == "preferences":  # SDK v2 cannot submit it; the tuning API takes it
        assert [p["InstanceType"] for p in resources["InstancePreferences"]] == [
            "ml.p5.48xlarge",
            "ml.p4d.24xlarge",
        ]
        assert resources["InstancePreferences"][0]["TrainingPlanArns"] == [TRAINING_PLAN]
        return
    assert resources == submitted(data)["ResourceConfig"]
    assert resources["TrainingPlanArn"] == TRAINING_PLAN


REFUSED = {
    "tensorboard": {"tensorboard": {"s3_uri": f"s3://{BUCKET}/tensorboard"}},
    "infra_check": {"infra_check": True},
    "remote_debug": {"remote_debug": True},
    "mlflow": {"mlflow": {"tracking_server_arn": MLFLOW_SERVER}},
}


@pytest.mark.parametrize("field", REFUSED)
def test_what_the_trials_cannot_take_is_refused(field, tmp_path: Path, capsys, monkeypatch):
    unreachable_aws(monkeypatch, tmp_path)  # refused before any AWS call
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job(**REFUSED[field])))
    code = main(["tune", str(path), "--dry-run", "--bucket", BUCKET, "--role", ROLE])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    line = next(line for line in captured.err.splitlines() if f"- {field}:" in line)
    assert "a tuning job's training jobs cannot" in line
