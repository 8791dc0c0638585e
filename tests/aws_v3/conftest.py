"""SDK v3 (``ModelTrainer``) tests against a moto server on 127.0.0.1.

They run only in an environment with the SageMaker Python SDK 3.x (the main ``.venv``, built
by ``.ci/install``; v2 and v3 cannot be installed together): elsewhere, such as ``.venv-v2``,
every test here is skipped with the reason. One moto server per session, reset before every
test; every AWS call goes to it through ``AWS_ENDPOINT_URL`` with dummy credentials, region
us-west-2, an explicit role ARN and bucket, telemetry off, and v3's IAM role validation off
(``SAGEMAKER_VALIDATE_ROLE=false``). What both SDK lines must do alike is tested once for
both in ``tests/sdk_lines``; what stays here is what v3 does its own way (ModelTrainer, its
drivers channel, the container command it runs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto_server import (
    MotoServer,
    capture_create_training_job,
    create_bucket,
    mark_aws_tests,
    point_sdk_at,
    running_moto_server,
    why_not_line,
)

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/SmdistTestRole"
BUCKET = "smdist-v3-test-bucket"
SKIP_REASON = why_not_line("v3")


def pytest_collection_modifyitems(items):
    mark_aws_tests(items, Path(__file__).parent, SKIP_REASON)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[MotoServer]:
    with running_moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch, tmp_path) -> MotoServer:
    """Every boto3 client pointed at the moto server; state reset; no user AWS config."""
    return point_sdk_at("v3", moto_server, monkeypatch, tmp_path, REGION)


@pytest.fixture
def boto_session(aws):
    """A boto3 Session on the moto server (no bucket yet: tests create it when they need)."""
    import boto3

    return boto3.Session(region_name=REGION)


@pytest.fixture
def bucket(boto_session) -> str:
    return create_bucket(boto_session, BUCKET)


@pytest.fixture
def captured_requests(boto_session) -> list[dict]:
    """Every CreateTrainingJob request sent through ``boto_session``, as boto3 sends it."""
    return capture_create_training_job(boto_session)


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
