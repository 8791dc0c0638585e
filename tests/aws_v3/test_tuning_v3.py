"""``smdist tune`` with SDK v3 installed, on the moto server.

The tuning API's algorithm specification has no ``ContainerEntrypoint``, so SDK v3's
``sm_train.sh`` and drivers channel cannot start a trial. Under v3 smdist's tuning job still
starts every trial through the framework image's training toolkit: the request is the one the
SDK v2 route renders for the same Submission (compared here field by field, as in
``tests/aws/test_tuning.py``), and it shares with v3's own CreateTrainingJob everything that is
not the way the container starts (compared here too): instances, role, image, metrics, limits,
network, spot, checkpoints and environment. Nothing v3-specific is uploaded (no drivers).

moto 5.2.5 implements Create, Describe, List and Delete of tuning jobs (a job is Completed at
once, with a made-up best training job), and neither StopHyperParameterTuningJob nor
ListTrainingJobsForHyperParameterTuningJob: see ``tests/aws/test_tuning.py`` for those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws.test_tuning_cases import (
    EXAMPLES,
    TUNING_EXAMPLE,
    assert_described_as_sent,
    assert_trials_launch_as_submit,
    botocore_problems,
    example,
    rich_job,
    tuning_variant,
    write,
)

from smdist.cli.app import main

from .conftest import BUCKET, REGION, ROLE, s3_objects

ACCOUNT = ["--bucket", BUCKET, "--role", ROLE, "--region", REGION]
# What v3's CreateTrainingJob and a trial share, the way the container starts aside.
SHARED_WITH_V3 = (
    "RoleArn",
    "ResourceConfig",
    "StoppingCondition",
    "VpcConfig",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "Environment",
)
V3_ONLY_CHANNELS = ("code", "sm_drivers")  # v3 ships the code and its drivers as channels


def dry_run(path: Path, capsys, verb: str = "tune") -> dict[str, Any]:
    assert main([verb, str(path), "--dry-run", *ACCOUNT]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def v2_route_request(path: Path, capsys, monkeypatch) -> dict[str, Any]:
    """submit's CreateTrainingJob for ``path`` as the SDK v2 route renders it (pure: no SDK)."""
    import smdist.backends.sagemaker as backend

    with monkeypatch.context() as patched:
        patched.setattr(backend, "sdk_v3_installed", lambda: False)
        return dry_run(path, capsys, "submit")


def assert_shares_with_v3(definition: dict[str, Any], v3: dict[str, Any]) -> None:
    for field in SHARED_WITH_V3:
        assert definition.get(field) == v3.get(field), field
    algorithm = definition["AlgorithmSpecification"]
    assert algorithm["TrainingImage"] == v3["AlgorithmSpecification"]["TrainingImage"]
    assert algorithm["MetricDefinitions"] == v3["AlgorithmSpecification"]["MetricDefinitions"]
    assert "ContainerEntrypoint" in v3["AlgorithmSpecification"]  # v3's way, not the trials'
    assert "ContainerEntrypoint" not in algorithm
    user = [c for c in v3.get("InputDataConfig", []) if c["ChannelName"] not in V3_ONLY_CHANNELS]
    trial = [c for c in definition.get("InputDataConfig", []) if c["ChannelName"] != "code"]
    assert trial == user
    output = {k: v for k, v in v3["OutputDataConfig"].items() if k != "CompressionType"}
    assert definition["OutputDataConfig"] == output
    # the trials get the user's values as the toolkit route carries them, plus the toolkit's
    static = definition["StaticHyperParameters"]
    assert "sagemaker_program" in static and "sagemaker_submit_directory" in static


def check(data, tmp_path, capsys, monkeypatch, boto_session) -> dict[str, Any]:
    shown = dry_run(write(tmp_path, data, "tune.yaml"), capsys)
    request = shown["CreateHyperParameterTuningJob"]
    assert botocore_problems("CreateHyperParameterTuningJob", request) == ""
    client = boto_session.client("sagemaker")
    client.create_hyper_parameter_tuning_job(**request)
    described = client.describe_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=request["HyperParameterTuningJobName"]
    )
    assert_described_as_sent(described, request)
    fixed = write(tmp_path, {k: v for k, v in data.items() if k != "tuning"}, "submit.yaml")
    v2 = v2_route_request(fixed, capsys, monkeypatch)
    assert v2["source_uri"] == shown["source_uri"]
    training = v2["CreateTrainingJob"]
    assert_trials_launch_as_submit(
        request["TrainingJobDefinition"],
        training,
        request["HyperParameterTuningJobName"],
        training["TrainingJobName"],
    )
    if main(["submit", str(fixed), "--dry-run", *ACCOUNT]) == 0:  # v3 carries this job
        v3 = json.loads(capsys.readouterr().out)["CreateTrainingJob"]
        assert_shares_with_v3(request["TrainingJobDefinition"], v3)
    else:  # v3's container cannot carry it; the trials' toolkit can
        assert "invalid job spec" in capsys.readouterr().err
    return request


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_tunes_through_the_toolkit(name, tmp_path, capsys, monkeypatch, bucket):
    import boto3

    data = tuning_variant(example(name))
    check(data, tmp_path, capsys, monkeypatch, boto3.Session(region_name=REGION))


@pytest.mark.parametrize("spot", [True, False], ids=["spot", "warm-pool"])
def test_every_setting_reaches_the_trials(spot, tmp_path, capsys, monkeypatch, bucket):
    import boto3

    data = rich_job(tuning_variant(example("pytorch_ddp.yaml")), spot=spot)
    request = check(data, tmp_path, capsys, monkeypatch, boto3.Session(region_name=REGION))
    assert request["TrainingJobDefinition"]["EnableNetworkIsolation"] is True


def test_the_tuning_example(tmp_path, capsys, monkeypatch, bucket):
    import boto3
    import yaml

    data = yaml.safe_load(TUNING_EXAMPLE.read_text())
    request = check(data, tmp_path, capsys, monkeypatch, boto3.Session(region_name=REGION))
    assert request["HyperParameterTuningJobConfig"]["Strategy"] == "Bayesian"


def test_tune_under_v3_uploads_the_code_only_and_waits(aws, boto_session, bucket, tmp_path, capsys):
    path = write(tmp_path, tuning_variant(example("pytorch_ddp.yaml")))
    shown = dry_run(path, capsys)
    assert main(["tune", str(path), *ACCOUNT, "--poll", "0.05", "--wait"]) == 0
    out = capsys.readouterr().out.splitlines()
    name = out[0]
    assert out[1] == "best: FakeTrainingJobName"  # moto's made-up best job
    objects = s3_objects(boto_session)
    assert list(objects) == [shown["source_uri"]]  # no sm_drivers: the toolkit starts trials
    described = boto_session.client("sagemaker").describe_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name
    )
    expected = shown["CreateHyperParameterTuningJob"]
    expected["TrainingJobDefinition"]["StaticHyperParameters"]["sagemaker_job_name"] = json.dumps(
        name
    )
    assert_described_as_sent(described, dict(expected, HyperParameterTuningJobName=name))


def test_status_of_a_tuning_job_under_v3(aws, boto_session, bucket, tmp_path, capsys):
    path = write(tmp_path, tuning_variant(example("mwms.yaml")))
    assert main(["tune", str(path), *ACCOUNT]) == 0
    name = capsys.readouterr().out.strip()
    assert main(["status", name]) == 0
    assert capsys.readouterr().out.startswith(f"{name}\tCompleted\ttuning job:")
