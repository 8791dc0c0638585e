"""What a newcomer meets on day one, with either SDK line installed: dry runs need no AWS
settings at all, the region is found as the AWS CLI finds it (``AWS_REGION`` included) by
every command, a bucket the user named is never created, and a job that cannot run on
SageMaker is refused by ``validate`` as by the dry run. Under SDK v3 besides: ``validate``
knows what v3's ``submit`` would refuse, the upload lines name v3's drivers, and
``smdist.model_trainer`` takes submit's defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from smdist.cli.app import main

from .conftest import BUCKET, ROLE, only

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.yaml"))
LIBRARY_JOBS = [
    ({"kind": "sdmp", "version": 2}, "ml.p4d.24xlarge"),
    ({"kind": "sddp"}, "ml.p4d.24xlarge"),
]


def job_file(tmp_path: Path, role: str | None = ROLE, **extra) -> Path:
    data = {
        "name": "day-one",
        "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
        "code": {"framework_version": "2.3.0", "py_version": "py311"},
        "role": role,
        **extra,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def no_aws_configuration(tmp_path, monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "SMDIST_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


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
    request = json.loads(captured.out)["CreateTrainingJob"]
    assert ".eu-west-1." in request["AlgorithmSpecification"]["TrainingImage"]
    assert "no AWS region" not in captured.err


def test_submit_status_and_logs_take_aws_region_alone(aws, bucket, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION")  # boto3 alone would find no region now
    assert main(["submit", str(job_file(tmp_path)), "--bucket", bucket]) == 0, (
        capsys.readouterr().err
    )
    name = capsys.readouterr().out.split()[0]
    assert main(["status", name, "--backend", "sagemaker"]) == 0, capsys.readouterr().err
    assert "Completed" in capsys.readouterr().out
    assert main(["logs", name, "--backend", "sagemaker"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["jobs", "--backend", "sagemaker", "--json"]) == 0, capsys.readouterr().err
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed[name]["status"] == "Completed" and listed[name]["kind"] == "job"
    assert listed[name]["started"] is not None and listed[name]["duration"] >= 0


@pytest.mark.usefixtures("no_aws_configuration")
def test_a_real_submit_with_no_region_anywhere_exits_2_naming_every_way_to_set_it(tmp_path, capsys):
    assert main(["submit", str(job_file(tmp_path)), "--bucket", BUCKET]) == 2
    err = capsys.readouterr().err
    assert "region: no AWS region is configured" in err
    assert "AWS_REGION" in err and "--region" in err


@pytest.mark.parametrize("how", ["--bucket", "SMDIST_BUCKET"])
def test_a_named_bucket_that_does_not_exist_is_refused_and_never_created(
    how, boto_session, tmp_path, capsys, monkeypatch
):
    """``submit`` with a bucket named by ``how`` that does not exist: exit 2 naming it, no
    bucket created, no job."""
    typo = BUCKET + "-typo"
    args = ["submit", str(job_file(tmp_path))]
    if how == "--bucket":
        args += ["--bucket", typo]
    else:
        monkeypatch.setenv("SMDIST_BUCKET", typo)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{how}: no such bucket" in err and typo in err
    assert typo not in [b["Name"] for b in boto_session.client("s3").list_buckets()["Buckets"]]
    assert boto_session.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []


@pytest.mark.parametrize(("strategy", "instance"), LIBRARY_JOBS)
@pytest.mark.usefixtures("no_aws_configuration")
def test_a_library_image_without_a_version_is_refused_by_validate_and_the_dry_run(
    strategy, instance, tmp_path, capsys
):
    """No framework_version, where the image must carry a library: ``validate`` and the dry
    run both refuse the job, naming code.framework_version."""
    path = job_file(
        tmp_path,
        strategy=strategy,
        cluster={"instance_type": instance, "instance_count": 2},
        code={},
    )
    for args in (["validate", str(path)], ["submit", str(path), "--dry-run"]):
        assert main(args) == 2
        assert "code.framework_version: is needed on SageMaker" in capsys.readouterr().err


@pytest.mark.usefixtures("no_aws_configuration")
def test_no_framework_version_plans_validates_and_dry_runs_with_a_warning(tmp_path, capsys):
    path = job_file(tmp_path, code={})
    assert main(["validate", str(path)]) == 0
    assert "code.framework_version: is not set" in capsys.readouterr().err
    assert main(["submit", str(path), "--dry-run"]) == 0, capsys.readouterr().err
    request = json.loads(capsys.readouterr().out)["CreateTrainingJob"]
    image = request["AlgorithmSpecification"]["TrainingImage"]
    assert image.endswith("/pytorch:2.13.0-cu133-amzn2023-sagemaker"), image


def test_a_local_job_is_not_refused_for_what_only_submit_needs(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    path = job_file(tmp_path, hyperparameters={"note": "it's"}, inputs={"train": f"file://{data}"})
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


# ---- what only SDK v3 does ---------------------------------------------------------------------
# v3's container script sources each hyperparameter inside single quotes; v2's toolkit passes
# it as an argument, so under v2 a quote is no reason to refuse the job.
@only("v3")
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_validate_and_plan_refuse_what_v3_submit_refuses(command, tmp_path, capsys):
    path = job_file(tmp_path, hyperparameters={"note": "it's"})
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert "hyperparameters.note: contains a single quote" in err


@only("v3")  # v3 ships a drivers channel next to the code; v2's toolkit needs none
def test_upload_lines_say_what_was_uploaded(aws, bucket, tmp_path, capsys):
    path = job_file(tmp_path)
    assert main(["submit", str(path), "--bucket", bucket]) == 0
    first = capsys.readouterr().err
    assert "code: uploaded " in first and "drivers: uploaded " in first
    assert main(["submit", str(path), "--bucket", bucket]) == 0
    second = capsys.readouterr().err
    assert "code: unchanged, not uploaded again" in second
    assert "drivers: unchanged, not uploaded again" in second


@only("v3")  # smdist.model_trainer builds v3's ModelTrainer; v2 has no such object
def test_model_trainer_takes_submits_defaults(aws, bucket, tmp_path, monkeypatch):
    import smdist
    from smdist.checks.reading import load
    from smdist.errors import SpecError

    monkeypatch.setenv("SMDIST_ROLE", ROLE)
    monkeypatch.setenv("SMDIST_BUCKET", bucket)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)  # AWS_REGION alone, as submit
    plan = smdist.plan(load(job_file(tmp_path, None)))
    trainer = smdist.model_trainer(plan)  # no role, bucket or region given
    assert trainer.role == ROLE
    assert trainer.sagemaker_session.default_bucket() == bucket
    assert trainer.sagemaker_session.boto_region_name == "us-west-2"
    monkeypatch.setenv("SMDIST_BUCKET", bucket + "-typo")
    with pytest.raises(SpecError) as raised:
        smdist.model_trainer(plan)
    assert raised.value.problems[0].path == "SMDIST_BUCKET"
