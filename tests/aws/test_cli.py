"""``smdist submit|status|logs|stop``: what CI relies on — exit 0 completed, 1 failed or stopped,
2 invalid configuration — and a dry run that needs no AWS at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from moto_server import unreachable_aws

from smdist.cli.app import main

from .conftest import BUCKET, REGION, ROLE

FAST = ["--poll", "0.05"]


def job_file(tmp_path: Path, **extra) -> Path:
    data = {
        "name": "cli-job",
        "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
        "code": {"framework_version": "2.3.0", "py_version": "py311"},
        "role": ROLE,
        "region": REGION,
        "hyperparameters": {"epochs": 3},
        **extra,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def submit(tmp_path: Path, capsys, *args: str, **extra) -> tuple[int, str, str]:
    code = main(["submit", str(job_file(tmp_path, **extra)), "--bucket", BUCKET, *FAST, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dry_run_needs_no_credentials_and_calls_no_aws(tmp_path, capsys, monkeypatch):
    unreachable_aws(monkeypatch, tmp_path)
    code = main(["submit", str(job_file(tmp_path)), "--dry-run", "--bucket", BUCKET])
    out = capsys.readouterr().out
    assert code == 0
    shown = json.loads(out)
    request = shown["CreateTrainingJob"]
    assert request["ResourceConfig"]["InstanceType"] == "ml.g5.12xlarge"
    assert request["HyperParameters"]["sagemaker_torch_distributed_enabled"] == "true"
    assert request["HyperParameters"]["sagemaker_submit_directory"] == json.dumps(
        shown["source_uri"]
    )
    assert shown["source_uri"].startswith(f"s3://{BUCKET}/smdist/source/")
    assert "pytorch_ddp.py" in shown["files"] and "smdist/runtime/args.py" in shown["files"]


def test_dry_run_shows_placeholders_for_what_only_aws_knows(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SMDIST_BUCKET", raising=False)
    path = job_file(tmp_path)
    data = yaml.safe_load(path.read_text())
    data.pop("role")
    path.write_text(yaml.safe_dump(data))
    assert main(["submit", str(path), "--dry-run"]) == 0
    request = json.loads(capsys.readouterr().out)["CreateTrainingJob"]
    assert request["RoleArn"] == "<role>"
    assert request["OutputDataConfig"]["S3OutputPath"] == "s3://<default bucket>/"


def test_submit_prints_the_job_name_and_returns(aws, boto_session, tmp_path, capsys):
    code, out, err = submit(tmp_path, capsys)
    assert code == 0
    name = out.strip().splitlines()[0]
    assert name.startswith("cli-job-")
    assert "uploaded" in err
    jobs = boto_session.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
    assert [job["TrainingJobName"] for job in jobs] == [name]


def test_submit_wait_exits_0_when_the_job_completes(aws, boto_session, tmp_path, capsys):
    code, _, err = submit(tmp_path, capsys, "--wait")
    assert code == 0
    assert "Completed; model: s3://" in err


def test_submit_wait_exits_1_when_the_job_fails(aws, boto_session, tmp_path, capsys):
    tags = {
        "smdist-test:polls-in-progress": "2",
        "smdist-test:outcome": "Failed",
        "smdist-test:failure-reason": "AlgorithmError: loss is nan",
    }
    code, _, err = submit(tmp_path, capsys, "--wait", tags=tags)
    assert code == 1
    assert "Failed: AlgorithmError: loss is nan" in err


def test_invalid_job_exits_2_before_any_aws_call(aws, boto_session, tmp_path, capsys):
    code, _, err = submit(
        tmp_path, capsys, cluster={"instance_type": "ml.g5.12xlarge", "instance_count": 0}
    )
    assert code == 2
    assert "cluster.instance_count" in err
    assert aws.object_writes(BUCKET, "") == []


def test_unknown_backend_exits_2(tmp_path, capsys):
    assert main(["submit", str(job_file(tmp_path)), "--backend", "k8s"]) == 2


def test_sagemaker_local_without_docker_exits_2(aws, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = submit(
        tmp_path, capsys, "--backend", "sagemaker-local", cluster={"instance_type": "local"}
    )
    assert code == 2
    assert "docker" in err


def test_status_exit_codes_follow_the_job(aws, boto_session, tmp_path, capsys):
    _, out, _ = submit(tmp_path, capsys)
    done = out.split()[0]
    assert main(["status", done]) == 0
    assert "Completed" in capsys.readouterr().out

    failed_dir = tmp_path / "failed"
    failed_dir.mkdir()
    tags = {"smdist-test:outcome": "Failed", "smdist-test:failure-reason": "bad input"}
    _, out, _ = submit(failed_dir, capsys, tags=tags)
    failed = out.split()[0]
    assert main(["status", failed]) == 1
    assert "reason: bad input" in capsys.readouterr().out
    assert main(["status", failed, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["FailureReason"] == "bad input"


def test_status_of_an_unknown_job_exits_2(aws, capsys):
    assert main(["status", "never-submitted"]) == 2
    assert "no SageMaker training job" in capsys.readouterr().err


def test_logs_prints_cloudwatch_lines(aws, boto_session, tmp_path, capsys):
    import time

    _, out, _ = submit(tmp_path, capsys)
    name = out.split()[0]
    logs = boto_session.client("logs")
    logs.create_log_group(logGroupName="/aws/sagemaker/TrainingJobs")
    stream = f"{name}/algo-1-1700000000"
    logs.create_log_stream(logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=stream)
    logs.put_log_events(
        logGroupName="/aws/sagemaker/TrainingJobs",
        logStreamName=stream,
        logEvents=[{"timestamp": int(time.time() * 1000), "message": "epoch 1 done"}],
    )
    assert main(["logs", name, "--follow", *FAST]) == 0
    assert capsys.readouterr().out.splitlines() == ["algo-1 | epoch 1 done"]


def test_stop_then_status_says_stopped(aws, boto_session, tmp_path, capsys):
    _, out, _ = submit(tmp_path, capsys, tags={"smdist-test:polls-in-progress": "100000"})
    name = out.split()[0]
    assert main(["status", name]) == 0  # still running
    assert main(["stop", name, "--wait", *FAST]) == 0
    assert "stop requested" in capsys.readouterr().err
    assert main(["status", name]) == 1
    assert "Stopped" in capsys.readouterr().out


@pytest.mark.parametrize("verb", ["logs", "stop"])
def test_verbs_on_an_unknown_job_exit_2(aws, capsys, verb):
    assert main([verb, "never-submitted"]) == 2
