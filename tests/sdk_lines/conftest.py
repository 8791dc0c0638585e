"""One module per behaviour, proved under both SageMaker SDK lines.

Where smdist must behave the same whichever SDK line is installed, the test is written once
here instead of once in ``tests/aws`` (SDK v2) and again in ``tests/aws_v3`` (SDK v3). Every
test in this directory runs once per line: the autouse ``sdk_line`` fixture is parametrised
``["v2", "v3"]``, and as v2 and v3 cannot be installed together, the case of the line that is
not installed is skipped with the reason. ``bash .ci/test`` runs this directory in ``.venv``
(v3) and in ``.venv-v2`` (v2), so each case is proved in the environment of its line. A test
of what only one line does takes ``only("v3")`` (or ``"v2"``): its other case is not made.

The AWS fixtures are those of ``tests/aws`` and ``tests/aws_v3``, set up for the case's line:
one moto server per session, reset before every test (``tests/moto_server.py``), and a bucket
only where a test asks for one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from moto_server import (
    LINES,
    MotoServer,
    capture_calls,
    create_bucket,
    mark_aws_tests,
    point_sdk_at,
    running_moto_server,
    why_not_line,
)

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/SmdistTestRole"
BUCKET = "smdist-lines-test-bucket"
WHY_NOT = {line: why_not_line(line) for line in LINES}


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    mine = [item for item in items if here in Path(item.fspath).parents]
    mark_aws_tests(mine, here, None)
    for item in mine:  # every one has an sdk_line case: the fixture is autouse
        why = WHY_NOT[item.callspec.params["sdk_line"]]
        if why:
            item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(autouse=True, params=LINES)
def sdk_line(request) -> str:
    """The SDK line this case proves, ``"v2"`` or ``"v3"`` (the installed one: the other's
    case is skipped at collection)."""
    return request.param


def only(line: str) -> pytest.MarkDecorator:
    """For a test of what only SDK ``line`` does: its one case (skipped where ``line`` is not
    installed). Say in the test why the other line has no such case."""
    return pytest.mark.parametrize("sdk_line", [line], indirect=True)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[MotoServer]:
    with running_moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture
def aws(sdk_line: str, moto_server: MotoServer, monkeypatch, tmp_path) -> MotoServer:
    """Every boto3 client pointed at the moto server, state reset, no user AWS configuration,
    and what the case's SDK line needs besides (``point_sdk_at``)."""
    return point_sdk_at(sdk_line, moto_server, monkeypatch, tmp_path, REGION)


@pytest.fixture
def boto_session(aws):
    """A boto3 Session on the moto server (no bucket yet: ``bucket`` makes it)."""
    import boto3

    return boto3.Session(region_name=REGION)


@pytest.fixture
def bucket(boto_session) -> str:
    return create_bucket(boto_session, BUCKET)


@pytest.fixture
def captured_requests(boto_session) -> list[dict]:
    """Every CreateTrainingJob request sent through ``boto_session``, as boto3 sends it."""
    return capture_calls(boto_session, "CreateTrainingJob")


@pytest.fixture
def captured_tuning_requests(boto_session) -> list[dict]:
    """Every CreateHyperParameterTuningJob request sent through ``boto_session``."""
    return capture_calls(boto_session, "CreateHyperParameterTuningJob")
