"""SDK v3 (``ModelTrainer``) tests against a moto server on 127.0.0.1.

They run only in an environment with the SageMaker Python SDK 3.x (the main ``.venv``, built
by ``.ci/install``; v2 and v3 cannot be installed together): elsewhere, such as ``.venv-v2``,
every test here is skipped with the reason. One moto server per session, reset before every
test; every AWS call goes to it through ``AWS_ENDPOINT_URL`` with dummy credentials, region
us-west-2, an explicit role ARN and bucket, telemetry off, and v3's IAM role validation off
(``SAGEMAKER_VALIDATE_ROLE=false``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from moto_server import (
    MotoServer,
    capture_create_training_job,
    point_aws_at,
    running_moto_server,
)

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/SmdistTestRole"
BUCKET = "smdist-v3-test-bucket"


def _sdk_v3_missing() -> str | None:
    """Why these tests cannot run here, or None when SDK v3 and moto are installed."""
    try:
        version = metadata.version("sagemaker")
    except metadata.PackageNotFoundError:
        return "the SageMaker Python SDK is not installed (SDK v3 tests: run them in .venv)"
    if not version.startswith("3"):
        return f"sagemaker {version} is installed; the SDK v3 tests run in .venv (.ci/test)"
    try:
        import moto.server  # noqa: F401
        import sagemaker.train  # noqa: F401
    except ImportError as exc:
        return f"the v3 environment is incomplete: {exc}"
    return None


SKIP_REASON = _sdk_v3_missing()


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.aws)
            if SKIP_REASON:
                item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[MotoServer]:
    with running_moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch, tmp_path) -> MotoServer:
    """Every boto3 client pointed at the moto server; state reset; no user AWS config."""
    point_aws_at(moto_server, monkeypatch, tmp_path, REGION, ("SMDIST_ROLE",))
    # v3 checks the role with IAM SimulatePrincipalPolicy and GetRole unless told not to.
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    # v3 reads SDK defaults from the user's and the admin's config files; point both at one
    # that sets nothing.
    empty = tmp_path / "sdk-config.yaml"
    empty.write_text("SchemaVersion: '1.0'\n")
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(empty))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(empty))
    return moto_server


@pytest.fixture
def boto_session(aws):
    """A boto3 Session on the moto server (no bucket yet: tests create it when they need)."""
    import boto3

    return boto3.Session(region_name=REGION)


@pytest.fixture
def bucket(boto_session) -> str:
    boto_session.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    return BUCKET


@pytest.fixture
def captured_requests(boto_session) -> list[dict]:
    """Every CreateTrainingJob request sent through ``boto_session``, as boto3 sends it."""
    return capture_create_training_job(boto_session)


def s3_objects(boto_session) -> dict[str, int]:
    """``s3://bucket/key`` -> size, for every object on the moto server."""
    s3 = boto_session.client("s3")
    objects = {}
    for found in s3.list_buckets()["Buckets"]:
        paginator = s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=found["Name"]):
            for item in page.get("Contents", []):
                objects[f"s3://{found['Name']}/{item['Key']}"] = item["Size"]
    return objects


# ---- the emulated container (test_v3_runs, test_v3_driver_runs) ---------------------------
REPO = Path(__file__).resolve().parents[2]


def _container_python() -> Path:
    return Path(os.environ.get("SMDIST_CONTAINER_PYTHON", REPO / ".venv" / "bin" / "python"))


def _why_no_container() -> str | None:
    """Why the emulated container cannot run here, or None."""
    if os.geteuid() != 0:
        return "the emulated container needs root (mount, UTS and network namespaces)"
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        return f"the emulated container needs {', '.join(missing)} (util-linux, iproute2)"
    probe = subprocess.run(
        ["unshare", "--mount", "--uts", "--net", "ip", "link", "add", "br0", "type", "bridge"],
        capture_output=True,
    )  # fmt: skip
    if probe.returncode != 0:
        return (
            f"namespaces or a bridge cannot be made here: {probe.stderr.decode(errors='replace')}"
        )
    return None


@pytest.fixture(scope="module")
def namespaces() -> None:
    why = _why_no_container()
    if why:
        pytest.skip(why)


@pytest.fixture(scope="module")
def container_python(namespaces) -> Path:
    """The interpreter that plays the training image's python (it must have torch)."""
    python = _container_python()
    if not python.is_file():
        pytest.skip(f"no image python at {python} (set SMDIST_CONTAINER_PYTHON)")
    has_torch = "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"
    found = subprocess.run([str(python), "-c", has_torch], capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"the image python {python} has no torch (set SMDIST_CONTAINER_PYTHON)")
    return python
