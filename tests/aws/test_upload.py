"""Code goes to S3 once per distinct content, without secrets, and the SDK uploads nothing."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from smdist.backends import sagemaker as backend
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, ROLE

SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYUPLOADTESTKEY"
SECRET_FILES = {
    ".env": f"AWS_SECRET_ACCESS_KEY={SECRET_KEY}",
    ".env.local": f"TOKEN={SECRET_KEY}",
    "deploy.pem": SECRET_KEY,
    "certs/server.key": SECRET_KEY,
    "id_ed25519": SECRET_KEY,
    ".aws/credentials": f"aws_secret_access_key = {SECRET_KEY}",
    "credentials.json": SECRET_KEY,
    ".git/config": SECRET_KEY,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "model").mkdir(parents=True)
    (root / "train.py").write_text("print('training')\n")
    (root / "model" / "net.py").write_text("LAYERS = 2\n")
    (root / ".gitignore").write_text("outputs/\n")
    (root / "outputs").mkdir()
    (root / "outputs" / "big.bin").write_bytes(b"\0" * 4096)
    for relative, text in SECRET_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def job_plan(source_dir: Path):
    return plan(
        JobSpec.from_dict(
            {
                "name": "upload",
                "strategy": {"kind": "pytorch_ddp"},
                "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
                "code": {
                    "source_dir": str(source_dir),
                    "entry_point": "train.py",
                    "framework_version": "2.3.0",
                    "py_version": "py311",
                },
                "role": ROLE,
            }
        )
    )


def submit(source_dir: Path, boto_session):
    return backend.launch(job_plan(source_dir), bucket=BUCKET, boto_session=boto_session)


def source_writes(aws) -> list[str]:
    return aws.object_writes(BUCKET, "smdist/source/")


def test_tarball_never_contains_secrets(project, boto_session, aws):
    job = submit(project, boto_session)
    key = job.source_uri.removeprefix(f"s3://{BUCKET}/")
    body = boto_session.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        names = tar.getnames()
        contents = b"".join(tar.extractfile(m).read() for m in tar.getmembers())
    assert not set(SECRET_FILES) & set(names)
    assert not any(n.startswith((".git/", ".aws/", "outputs/")) for n in names)
    assert SECRET_KEY.encode() not in contents
    assert {"train.py", "model/net.py", "launch_torchrun.py", "smdist/__init__.py"} <= set(names)


def test_unchanged_code_is_uploaded_once(project, boto_session, aws):
    first = submit(project, boto_session)
    assert first.uploaded_bytes > 0
    assert len(source_writes(aws)) == 1
    second = submit(project, boto_session)
    assert second.uploaded_bytes == 0
    assert second.source_uri == first.source_uri
    assert len(source_writes(aws)) == 1  # not one more PutObject
    assert second.name != first.name


def test_changed_file_is_uploaded_once(project, boto_session, aws):
    first = submit(project, boto_session)
    (project / "model" / "net.py").write_text("LAYERS = 3\n")
    changed = submit(project, boto_session)
    assert changed.source_uri != first.source_uri
    assert changed.uploaded_bytes > 0
    again = submit(project, boto_session)
    assert again.uploaded_bytes == 0
    assert len(source_writes(aws)) == 2


def test_ignored_and_secret_files_do_not_change_the_upload(project, boto_session, aws):
    first = submit(project, boto_session)
    (project / "outputs" / "big.bin").write_bytes(b"\1" * 4096)
    (project / ".env").write_text("ROTATED=1")
    assert submit(project, boto_session).source_uri == first.source_uri
    assert len(source_writes(aws)) == 1


def test_the_sdk_uploads_nothing_itself(project, boto_session, aws):
    submit(project, boto_session)
    submit(project, boto_session)
    writes = [
        line
        for line in aws.requests()
        if line.startswith(("PUT /", "POST /")) and line.split()[1].startswith(f"/{BUCKET}/")
    ]
    assert len(writes) == 1 and "/smdist/source/" in writes[0]


def test_submissions_in_the_same_second_get_distinct_names(project, boto_session):
    names = [submit(project, boto_session).name for _ in range(4)]
    assert len(set(names)) == 4
    listed = boto_session.client("sagemaker").list_training_jobs(MaxResults=100)
    assert set(names) <= {job["TrainingJobName"] for job in listed["TrainingJobSummaries"]}


def test_ready_entry_points_are_shipped_when_no_source_dir(boto_session, aws):
    spec = JobSpec.from_dict(
        {
            "name": "ready",
            "strategy": {"kind": "mwms"},
            "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
            "code": {"framework_version": "2.14", "py_version": "py310"},
            "role": ROLE,
        }
    )
    job = backend.launch(plan(spec), bucket=BUCKET, boto_session=boto_session)
    key = job.source_uri.removeprefix(f"s3://{BUCKET}/")
    body = boto_session.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        names = tar.getnames()
    assert "tensorflow_mwms.py" in names and "smdist/runtime/tf_config.py" in names


def test_dry_run_names_the_secrets_it_leaves_out(project, aws):
    shown = backend.dry_run(job_plan(project), bucket=BUCKET)
    assert ".env" in shown.excluded_secrets and ".aws/credentials" in shown.excluded_secrets
    assert not set(SECRET_FILES) & set(shown.files)
    assert SECRET_KEY not in str(shown.to_dict())
