"""A moto server on 127.0.0.1 standing in for S3, SageMaker and CloudWatch Logs.

These are the SDK v2 (estimator) tests: they run in an environment with the SageMaker Python
SDK 2.x (``.venv-v2``, built by ``.ci/install``; v2 and v3 cannot be installed together).
Elsewhere, such as the SDK v3 environment ``.venv``, every test here is skipped with the
reason; ``bash .ci/test`` runs them in ``.venv-v2``. What both SDK lines must do alike is
tested once for both in ``tests/sdk_lines``; what stays here is what v2 does its own way (the
estimator's request, its local mode's compose, jobs that run, fail and stop on
``moto_lifecycle.py``).

One server per test session (started here, stopped at the end), reset before every test. Every
AWS call of the code under test goes to it through ``AWS_ENDPOINT_URL``, with dummy
credentials, region us-west-2, an explicit role ARN and an explicit bucket; the user's AWS
configuration files are hidden so nothing can reach a real account.
"""

from __future__ import annotations

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
BUCKET = "smdist-test-bucket"
LIFECYCLE_SERVER = Path(__file__).with_name("moto_lifecycle.py")
SKIP_REASON = why_not_line("v2")


def pytest_collection_modifyitems(items):
    mark_aws_tests(items, Path(__file__).parent, SKIP_REASON)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[MotoServer]:
    with running_moto_server(tmp_path_factory.mktemp("moto"), [str(LIFECYCLE_SERVER)]) as server:
        yield server


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch, tmp_path) -> MotoServer:
    """Environment pointing every boto3 client at the moto server, state reset."""
    return point_sdk_at("v2", moto_server, monkeypatch, tmp_path, REGION)


@pytest.fixture
def boto_session(aws):
    import boto3

    session = boto3.Session(region_name=REGION)
    create_bucket(session, BUCKET)
    return session


@pytest.fixture
def captured_requests(boto_session) -> list[dict]:
    """Every CreateTrainingJob request sent through ``boto_session``, as boto3 sends it."""
    return capture_create_training_job(boto_session)
