"""backend="sagemaker-local": fails early and clearly without Docker, and keeps the user's AWS
keys out of the compose file the SDK generates unless asked.

There is no Docker daemon where these tests run, so the Docker CLI is replaced, on PATH, by a
small script that answers the commands SageMaker local mode issues (``info``, ``compose
version``, ``images -q``, ``compose -f FILE up``) and records the compose file it was given.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
import yaml

import smdist
from smdist.backends.base import JobStatus
from smdist.backends.sagemaker import local_mode as sagemaker_local
from smdist.errors import SpecError

from .conftest import REGION

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYLOCALTESTKEY"

FAKE_DOCKER = """\
#!{python}
import os, shutil, sys
args = sys.argv[1:]
mode = os.environ.get("FAKE_DOCKER_MODE", "ok")
if args[:1] == ["info"]:
    if mode == "no-daemon":
        print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
              "Is the docker daemon running?", file=sys.stderr)
        sys.exit(1)
    print("27.0.0")
    sys.exit(0)
if args[:2] == ["compose", "version"]:
    if mode == "no-compose":
        print("docker: 'compose' is not a docker command.", file=sys.stderr)
        sys.exit(1)
    print("Docker Compose version v2.29.0")
    sys.exit(0)
if args[:1] == ["images"]:
    print("sha256:0123456789ab")
    sys.exit(0)
if args[:1] == ["compose"] and "up" in args:
    compose_file = args[args.index("-f") + 1]
    shutil.copy(compose_file, os.environ["FAKE_DOCKER_RECORD"])
    print("algo-1-abcde  | [metrics] step=1 loss=0.500000", flush=True)
    print("algo-1-abcde  | training done", flush=True)
    sys.exit(int(os.environ.get("FAKE_DOCKER_EXIT", "0")))
sys.exit(0)
"""

SPEC = {
    "name": "local-mode",
    "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
    "cluster": {"instance_type": "local", "instance_count": 1},
    "code": {"framework_version": "2.3.0", "py_version": "py311"},
    "region": REGION,
}


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(FAKE_DOCKER.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    record = tmp_path / "compose-file.yaml"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setenv("FAKE_DOCKER_RECORD", str(record))
    monkeypatch.setenv("FAKE_DOCKER_MODE", "ok")
    return record


@pytest.fixture
def long_lived_keys(aws, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIALOCALMODETESTKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)


def test_missing_docker_fails_before_anything_starts(aws, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(SpecError, match="`docker` is not on PATH") as raised:
        smdist.fit(**SPEC, backend="sagemaker-local")
    assert "backend 'local'" in str(raised.value)


def test_unreachable_docker_daemon_is_reported(aws, fake_docker, monkeypatch):
    monkeypatch.setenv("FAKE_DOCKER_MODE", "no-daemon")
    with pytest.raises(SpecError, match="cannot reach the Docker daemon") as raised:
        smdist.fit(**SPEC, backend="sagemaker-local")
    assert "Is the docker daemon running?" in str(raised.value)


def test_missing_compose_is_reported(aws, fake_docker, monkeypatch):
    monkeypatch.setenv("FAKE_DOCKER_MODE", "no-compose")
    with pytest.raises(SpecError, match="Docker Compose is missing"):
        sagemaker_local.check_docker()


def test_several_gpu_instances_are_refused():
    spec = dict(SPEC, cluster={"instance_type": "ml.g5.xlarge", "instance_count": 2})
    with pytest.raises(SpecError, match="only one local_gpu instance"):
        smdist.fit(**spec, backend="sagemaker-local")


def test_credentials_stay_out_of_the_compose_file(long_lived_keys, fake_docker):
    job = smdist.fit(**SPEC, backend="sagemaker-local", logs=False)
    assert job.status is JobStatus.COMPLETED, job.failure_reason
    text = fake_docker.read_text()
    assert SECRET not in text and "AWS_SECRET_ACCESS_KEY" not in text
    lines = list(job.logs())
    assert any("[metrics] step=1 loss=0.500000" in line for line in lines)


def test_credentials_pass_only_when_asked_and_said(long_lived_keys, fake_docker, capfd):
    job = smdist.fit(
        **SPEC, backend="sagemaker-local", logs=False, options={"pass_aws_credentials": True}
    )
    assert job.status is JobStatus.COMPLETED, job.failure_reason
    compose = yaml.safe_load(fake_docker.read_text())
    environment = next(iter(compose["services"].values()))["environment"]
    assert f"AWS_SECRET_ACCESS_KEY={SECRET}" in environment
    assert "writes your AWS credentials in plain text" in capfd.readouterr().err


def test_failed_containers_fail_the_job(aws, fake_docker, monkeypatch):
    monkeypatch.setenv("FAKE_DOCKER_EXIT", "3")
    job = smdist.fit(**SPEC, backend="sagemaker-local", logs=False)
    assert job.status is JobStatus.FAILED
    assert "exited with code 3" in job.failure_reason


def test_staged_code_is_the_bundle(long_lived_keys, fake_docker):
    smdist.fit(**SPEC, backend="sagemaker-local", logs=False)
    compose = yaml.safe_load(fake_docker.read_text())
    volumes = next(iter(compose["services"].values()))["volumes"]
    code = next(v.split(":")[0] for v in volumes if v.endswith(":/opt/ml/code"))
    staged = sorted(str(p.relative_to(code)) for p in Path(code).rglob("*") if p.is_file())
    assert "launch_torchrun.py" in staged and "smdist/runtime/launcher.py" in staged
