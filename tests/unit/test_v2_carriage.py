"""What SDK v2's estimators cannot send, found with no SDK and no AWS call (``v2.carriage``),
and what a tuning job's trials cannot take (``tuning.request.tuning_problems``): each a
Problem naming the spec field, never a setting dropped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from smdist.backends.sagemaker.tuning.request import REFUSED_IN_TUNING, tuning_problems
from smdist.backends.sagemaker.v2.carriage import carriage_problems
from smdist.spec.job import JobSpec

MLFLOW = "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/team"
PLAN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5"


def spec(**more: Any) -> JobSpec:
    return JobSpec.from_dict(
        {
            "name": "carriage",
            "strategy": {"kind": "pytorch_ddp"},
            "cluster": {"instance_type": "ml.p5.48xlarge", "instance_count": 2},
            **more,
        }
    )


def problems(job: JobSpec) -> dict[str, Any]:
    # the spec alone is read: no plan (whose checks would refuse some of these first)
    return {p.path: p for p in carriage_problems(SimpleNamespace(spec=job))}


def test_a_plain_job_has_none():
    assert problems(spec()) == {}


def test_instance_preferences_and_mlflow_name_the_line_that_sends_them():
    found = problems(
        spec(
            cluster={
                "instance_preferences": [
                    {"instance_type": "ml.p5.48xlarge", "instance_count": 2, "training_plan": PLAN},
                    {"instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                ]
            },
            mlflow={"tracking_server_arn": MLFLOW},
        )
    )
    assert set(found) == {"cluster.instance_preferences", "mlflow"}
    for problem in found.values():
        assert "SDK v2 cannot send" in problem.message
        assert "smdist[sagemaker]" in problem.valid
    assert found["cluster.instance_preferences"].value == ["ml.p5.48xlarge", "ml.p4d.24xlarge"]


def groups_job(names: list[str], **more: Any) -> JobSpec:
    return spec(
        strategy={"kind": "pytorch_ddp", "instance_groups": names},
        cluster={
            "instance_groups": [
                {"name": "a", "instance_type": "ml.g5.xlarge", "instance_count": 1},
                {"name": "b", "instance_type": "ml.g5.xlarge", "instance_count": 1},
                {"name": "c", "instance_type": "ml.c5.2xlarge", "instance_count": 1},
            ]
        },
        **more,
    )


def test_one_distribution_group_under_v2():
    assert problems(groups_job(["a"])) == {}
    problem = problems(groups_job(["a", "b"]))["strategy.instance_groups"]
    assert "SDK v2" in problem.message and problem.value == ["a", "b"]


def test_isolation_beside_channels_on_groups():
    routed = {"train": {"uri": "s3://smdist-bucket/train", "instance_groups": ["a"]}}
    isolated = {"isolation": True}
    assert problems(groups_job(["a"], inputs=routed)) == {}
    assert problems(groups_job(["a"], network=isolated)) == {}
    problem = problems(groups_job(["a"], inputs=routed, network=isolated))["network.isolation"]
    assert "train" in problem.message and "InstanceGroupNames" in problem.message


TRACKING = {
    "tensorboard": {"tensorboard": {}},
    "infra_check": {"infra_check": True},
    "remote_debug": {"remote_debug": True},
    "mlflow": {"mlflow": {"tracking_server_arn": MLFLOW}},
}


@pytest.mark.parametrize("field", TRACKING)
def test_a_tuning_job_refuses_what_its_definition_has_no_place_for(field):
    job = SimpleNamespace(spec=spec(**TRACKING[field]), job_name="carriage-<submit-time>")
    (problem,) = tuning_problems(job)
    assert problem.path == field
    assert problem.message.startswith("a tuning job's training jobs cannot")
    assert {f for f, _ in REFUSED_IN_TUNING.values()} == set(TRACKING)


def test_retries_reach_the_trials():
    job = SimpleNamespace(spec=spec(retry={"max_attempts": 2}), job_name="x")
    assert tuning_problems(job) == []
