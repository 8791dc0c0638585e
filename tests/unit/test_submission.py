"""``Plan.bind``: the plan of a job bound to its name, region, bucket, role and code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import smdist
from smdist.checks.reading import load
from smdist.errors import SpecError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
CODE = "s3://bucket-a/smdist/source/abc/sourcedir.tar.gz"


def bound(example: str, **overrides):
    plan = smdist.plan(load(EXAMPLES / f"{example}.yaml"))
    values = dict(job_name="job-1", region="us-west-2", bucket="bucket-a", role=ROLE)
    values.update(overrides)
    return plan, plan.bind(code_uri=CODE, **values)


def decoded(wire: dict[str, str]) -> dict:
    return {name: json.loads(value) for name, value in wire.items()}


@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_binding_leaves_no_placeholder_and_keeps_everything_else(example):
    plan, submission = bound(example)
    assert "<" in json.dumps(plan.wire_hyperparameters)  # the plan shows what is not known yet
    assert "<" not in json.dumps(submission.wire_hyperparameters)
    values = decoded(submission.wire_hyperparameters)
    assert values["sagemaker_job_name"] == "job-1"
    assert values["sagemaker_region"] == "us-west-2"
    assert values["sagemaker_submit_directory"] == CODE
    unbound = decoded(plan.wire_hyperparameters)
    changed = {name for name in values if values[name] != unbound.get(name)}
    assert changed <= {
        "sagemaker_job_name",
        "sagemaker_region",
        "sagemaker_submit_directory",
        "model_dir",
    }
    assert submission.estimator_kwargs["role"] == ROLE
    assert submission.plan is plan


def test_tensorflow_model_dir_follows_the_bucket_or_the_output_path():
    _, submission = bound("mwms")
    assert decoded(submission.wire_hyperparameters)["model_dir"] == "s3://bucket-a/job-1/model"
    plan = smdist.plan(
        load(EXAMPLES / "mwms.yaml").model_copy(update={"output_path": "s3://out-b/runs"})
    )
    with_output = plan.bind(job_name="j", region="us-west-2", bucket=None, role=None, code_uri=CODE)
    assert decoded(with_output.wire_hyperparameters)["model_dir"] == "s3://out-b/runs/j/model"


def test_mpi_tensorflow_keeps_the_containers_model_directory():
    _, submission = bound("horovod_tensorflow", bucket=None)
    assert decoded(submission.wire_hyperparameters)["model_dir"] == "/opt/ml/model"


def test_network_isolation_reads_the_code_from_its_channel():
    spec = load(EXAMPLES / "pytorch_ddp.yaml")
    spec = spec.model_copy(update={"network": {"isolation": True}})
    submission = smdist.plan(spec).bind(
        job_name="j", region="us-west-2", bucket="b-1", role=ROLE, code_uri=CODE
    )
    directory = decoded(submission.wire_hyperparameters)["sagemaker_submit_directory"]
    assert directory == "/opt/ml/input/data/code/sourcedir.tar.gz"
    assert submission.code_uri == CODE


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"job_name": "bad name;rm"}, "job_name"),
        ({"job_name": "x" * 64}, "job_name"),
        ({"region": ""}, "region"),
    ],
)
def test_unusable_bound_values_are_refused_naming_them(overrides, field):
    with pytest.raises(SpecError) as error:
        bound("pytorch_ddp", **overrides)
    assert error.value.problems[0].path == field


def test_tensorflow_without_a_bucket_or_output_path_cannot_name_its_model_dir():
    with pytest.raises(SpecError) as error:
        bound("mwms", bucket=None)
    assert error.value.problems[0].path == "bucket"
