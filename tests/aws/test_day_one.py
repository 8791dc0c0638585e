"""What a newcomer meets on day one with SDK v2 installed: dry runs need no AWS settings at
all, the region is found as the AWS CLI finds it (``AWS_REGION`` included) by every command,
and a bucket the user named is never created."""

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
    # The CI workflow in examples/ci/ runs exactly this on every job file, with no AWS at all.
    assert main(["submit", str(example), "--dry-run"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    request = json.loads(captured.out)["CreateTrainingJob"]
    assert "no AWS region is configured: the request is shown for us-east-1" in captured.err
    image = request["AlgorithmSpecification"]["TrainingImage"]
    assert ".us-east-1." in image, image


@pytest.mark.usefixtures("no_aws_configuration")
def test_dry_run_takes_aws_region_from_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert main(["submit", str(job_file(tmp_path)), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert (
        ".eu-west-1."
        in json.loads(captured.out)["CreateTrainingJob"]["AlgorithmSpecification"]["TrainingImage"]
    )
    assert "no AWS region" not in captured.err


def test_submit_status_and_logs_take_aws_region_alone(
    aws, boto_session, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("AWS_DEFAULT_REGION")  # boto3 alone would find no region now
    assert main(["submit", str(job_file(tmp_path)), "--bucket", BUCKET]) == 0, (
        capsys.readouterr().err
    )
    name = capsys.readouterr().out.split()[0]
    assert main(["status", name, "--backend", "sagemaker"]) == 0, capsys.readouterr().err
    assert "Completed" in capsys.readouterr().out
    assert main(["logs", name, "--backend", "sagemaker"]) == 0, capsys.readouterr().err


@pytest.mark.usefixtures("no_aws_configuration")
def test_a_real_submit_with_no_region_anywhere_exits_2_naming_every_way_to_set_it(tmp_path, capsys):
    assert main(["submit", str(job_file(tmp_path)), "--bucket", BUCKET]) == 2
    err = capsys.readouterr().err
    assert "region: no AWS region is configured" in err
    assert "AWS_REGION" in err and "--region" in err


@pytest.mark.parametrize("how", ["--bucket", "SMDIST_BUCKET"])
def test_a_named_bucket_that_does_not_exist_is_refused_and_never_created(
    how, aws, boto_session, tmp_path, capsys, monkeypatch
):
    day_one_cases.assert_named_bucket_refused(
        how, BUCKET + "-typo", job_file(tmp_path), boto_session, capsys, monkeypatch
    )


@pytest.mark.parametrize(("strategy", "instance"), LIBRARY_JOBS)
@pytest.mark.usefixtures("no_aws_configuration")
def test_a_library_image_without_a_version_is_refused_by_validate_and_the_dry_run(
    strategy, instance, tmp_path, capsys
):
    day_one_cases.assert_refused_without_a_version(strategy, instance, ROLE, tmp_path, capsys)
