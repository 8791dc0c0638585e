"""A moto server on 127.0.0.1 standing in for S3, SageMaker and CloudWatch Logs.

These are the SDK v2 (estimator) tests: they run in an environment with the SageMaker Python
SDK 2.x (``.venv-v2``, built by ``.ci/install``; v2 and v3 cannot be installed together).
Elsewhere, such as the SDK v3 environment ``.venv``, every test here is skipped with the
reason; ``bash .ci/test`` runs them in ``.venv-v2``.

One server per test session (started here, stopped at the end), reset before every test. Every
AWS call of the code under test goes to it through ``AWS_ENDPOINT_URL``, with dummy
credentials, region us-west-2, an explicit role ARN and an explicit bucket; the user's AWS
configuration files are hidden so nothing can reach a real account.
"""

from __future__ import annotations

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

pytest.importorskip("moto", reason="the aws tests need moto[server] (pip install smdist[dev])")

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/SmdistTestRole"
BUCKET = "smdist-test-bucket"
LIFECYCLE_SERVER = Path(__file__).with_name("moto_lifecycle.py")


def _sdk_v2_missing() -> str | None:
    """Why these tests cannot run here, or None when SDK v2 is installed."""
    try:
        version = metadata.version("sagemaker")
    except metadata.PackageNotFoundError:
        return "the SageMaker Python SDK is not installed (SDK v2 tests: run them in .venv-v2)"
    if not version.startswith("2."):
        return f"sagemaker {version} is installed; the SDK v2 tests run in .venv-v2 (.ci/test)"
    return None


SKIP_REASON = _sdk_v2_missing()


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.aws)
            if SKIP_REASON:
                item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[MotoServer]:
    with running_moto_server(tmp_path_factory.mktemp("moto"), [str(LIFECYCLE_SERVER)]) as server:
        yield server


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch, tmp_path) -> MotoServer:
    """Environment pointing every boto3 client at the moto server, state reset."""
    point_aws_at(moto_server, monkeypatch, tmp_path, REGION, ("SMDIST_ROLE", "SMDIST_BUCKET"))
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    return moto_server


@pytest.fixture
def boto_session(aws):
    import boto3

    session = boto3.Session(region_name=REGION)
    session.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    return session


@pytest.fixture
def captured_requests(boto_session) -> list[dict]:
    """Every CreateTrainingJob request sent through ``boto_session``, as boto3 sends it."""
    return capture_create_training_job(boto_session)
