"""What the SDK v2 and v3 day-one suites share: a job file, no AWS configuration at all, and the
examples every CI dry run goes through (one suite runs in each SDK's environment)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.yaml"))
LIBRARY_JOBS = [
    ({"kind": "sdmp", "version": 2}, "ml.p4d.24xlarge"),
    ({"kind": "sddp"}, "ml.p4d.24xlarge"),
]


def job_file(tmp_path: Path, role: str, **extra) -> Path:
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


def assert_refused_without_a_version(strategy: dict, instance: str, role: str, tmp_path: Path,
                                     capsys) -> None:  # fmt: skip
    """A job whose image must carry a library, with no framework_version: ``validate`` and the
    dry run both refuse it, naming code.framework_version."""
    from smdist.cli.app import main

    path = job_file(
        tmp_path,
        role,
        strategy=strategy,
        cluster={"instance_type": instance, "instance_count": 2},
        code={},
    )
    for args in (["validate", str(path)], ["submit", str(path), "--dry-run"]):
        assert main(args) == 2
        assert "code.framework_version: is needed on SageMaker" in capsys.readouterr().err


def assert_named_bucket_refused(how: str, typo: str, path: Path, boto_session, capsys,
                                monkeypatch) -> None:  # fmt: skip
    """``submit`` with a bucket named by ``how`` (``--bucket`` or ``SMDIST_BUCKET``) that does
    not exist: exit 2 naming it, no bucket created, no job."""
    from smdist.cli.app import main

    args = ["submit", str(path)]
    if how == "--bucket":
        args += ["--bucket", typo]
    else:
        monkeypatch.setenv("SMDIST_BUCKET", typo)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{how}: no such bucket" in err and typo in err
    assert typo not in [b["Name"] for b in boto_session.client("s3").list_buckets()["Buckets"]]
    assert boto_session.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []
