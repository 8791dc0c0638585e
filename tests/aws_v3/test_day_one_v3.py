"""What a newcomer meets on day one with SDK v3 installed: dry runs need no AWS settings,
``validate`` knows what ``submit`` would refuse, the region is found as the AWS CLI finds it,
a named bucket is never created, and the upload lines say what was uploaded."""

from __future__ import annotations

import json
from pathlib import Path

import day_one_cases
import pytest
from day_one_cases import EXAMPLES, LIBRARY_JOBS, no_aws_configuration  # noqa: F401 - a fixture

from smdist.cli.app import main

from .conftest import BUCKET, ROLE


def job_file(tmp_path: Path, **extra) -> Path:
    return day_one_cases.job_file(tmp_path, ROLE, **extra)


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.stem for path in EXAMPLES])
@pytest.mark.usefixtures("no_aws_configuration")
def test_every_example_dry_runs_with_no_aws_configuration(example, capsys):
    assert main(["submit", str(example), "--dry-run"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    request = json.loads(captured.out)["CreateTrainingJob"]
    assert "no AWS region is configured: the request is shown for us-east-1" in captured.err
    assert ".us-east-1." in request["AlgorithmSpecification"]["TrainingImage"]


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_validate_and_plan_refuse_what_v3_submit_refuses(command, tmp_path, capsys):
    path = job_file(tmp_path, hyperparameters={"note": "it's"})
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert "hyperparameters.note: contains a single quote" in err


def test_a_local_job_is_not_refused_for_what_only_submit_needs(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    path = job_file(tmp_path, hyperparameters={"note": "it's"}, inputs={"train": f"file://{data}"})
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


@pytest.mark.usefixtures("no_aws_configuration")
def test_no_framework_version_plans_validates_and_dry_runs_with_a_warning(tmp_path, capsys):
    path = job_file(tmp_path, code={})
    assert main(["validate", str(path)]) == 0
    assert "code.framework_version: is not set" in capsys.readouterr().err
    assert main(["submit", str(path), "--dry-run"]) == 0, capsys.readouterr().err
    request = json.loads(capsys.readouterr().out)["CreateTrainingJob"]
    image = request["AlgorithmSpecification"]["TrainingImage"]
    assert image.endswith("/pytorch:2.13.0-cu133-amzn2023-sagemaker"), image


def test_submit_status_and_logs_take_aws_region_alone(
    aws, boto_session, bucket, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert main(["submit", str(job_file(tmp_path)), "--bucket", bucket]) == 0, (
        capsys.readouterr().err
    )
    name = capsys.readouterr().out.split()[0]
    assert main(["status", name, "--backend", "sagemaker"]) == 0, capsys.readouterr().err
    assert main(["logs", name, "--backend", "sagemaker"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("how", ["--bucket", "SMDIST_BUCKET"])
def test_a_named_bucket_that_does_not_exist_is_refused_and_never_created(
    how, aws, boto_session, tmp_path, capsys, monkeypatch
):
    day_one_cases.assert_named_bucket_refused(
        how, BUCKET + "-typo", job_file(tmp_path), boto_session, capsys, monkeypatch
    )


def test_upload_lines_say_what_was_uploaded(aws, boto_session, bucket, tmp_path, capsys):
    path = job_file(tmp_path)
    assert main(["submit", str(path), "--bucket", bucket]) == 0
    first = capsys.readouterr().err
    assert "code: uploaded " in first and "drivers: uploaded " in first
    assert main(["submit", str(path), "--bucket", bucket]) == 0
    second = capsys.readouterr().err
    assert "code: unchanged, not uploaded again" in second
    assert "drivers: unchanged, not uploaded again" in second


@pytest.mark.parametrize(("strategy", "instance"), LIBRARY_JOBS)
@pytest.mark.usefixtures("no_aws_configuration")
def test_a_library_image_without_a_version_is_refused_by_validate_and_the_dry_run(
    strategy, instance, tmp_path, capsys
):
    day_one_cases.assert_refused_without_a_version(strategy, instance, ROLE, tmp_path, capsys)


def test_model_trainer_takes_submits_defaults(aws, boto_session, bucket, tmp_path, monkeypatch):
    import smdist
    from smdist.checks.reading import load
    from smdist.errors import SpecError

    monkeypatch.setenv("SMDIST_ROLE", ROLE)
    monkeypatch.setenv("SMDIST_BUCKET", bucket)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)  # AWS_REGION alone, as submit
    plan = smdist.plan(load(day_one_cases.job_file(tmp_path, None)))
    trainer = smdist.model_trainer(plan)  # no role, bucket or region given
    assert trainer.role == ROLE
    assert trainer.sagemaker_session.default_bucket() == bucket
    assert trainer.sagemaker_session.boto_region_name == "us-west-2"
    monkeypatch.setenv("SMDIST_BUCKET", bucket + "-typo")
    with pytest.raises(SpecError) as raised:
        smdist.model_trainer(plan)
    assert raised.value.problems[0].path == "SMDIST_BUCKET"
