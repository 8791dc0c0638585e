"""A session smdist builds validates its SDK defaults config once, not at every config lookup,
and a config that breaks the SDK's schema is still refused at every lookup.

The SDK's own lookup functions run against the installed line's real schema; ``jsonschema.
validate`` is only counted (each call checks the whole schema against JSON Schema's
meta-schema, the cost being saved).
"""

from __future__ import annotations

from typing import Any

import boto3
import jsonschema
import pytest

from .conftest import BUCKET, REGION

TELEMETRY = "SageMaker.PythonSDK.Modules.TelemetryOptOut"
BROKEN = {"SchemaVersion": "1.0", "SageMaker": {"NoSuchResource": {"Field": 1}}}


def smdist_session(line: str) -> Any:
    boto = boto3.Session(region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    if line == "v2":
        from smdist.backends.sagemaker.sdk import sagemaker_session

        return sagemaker_session(boto, BUCKET)
    from smdist.backends.sagemaker.v3.session import sagemaker_session

    return sagemaker_session(boto, BUCKET)


def lookups(line: str) -> list:
    """The installed line's config lookups that validate the session's config first."""
    if line == "v2":
        from sagemaker.utils import get_sagemaker_config_value

        return [get_sagemaker_config_value]
    from sagemaker.core.common_utils import get_sagemaker_config_value
    from sagemaker.core.config.config_manager import SageMakerConfig

    return [get_sagemaker_config_value, SageMakerConfig().get_sagemaker_config_value]


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list:
    calls: list = []
    validate = jsonschema.validate

    def counted(*args: Any, **kwargs: Any) -> None:
        calls.append(args)
        validate(*args, **kwargs)

    monkeypatch.setattr(jsonschema, "validate", counted)
    return calls


def test_lookups_validate_the_same_config_once_and_refuse_a_broken_one_every_time(
    sdk_line, validations
):
    session = smdist_session(sdk_line)
    for lookup in lookups(sdk_line):
        for _ in range(5):
            assert lookup(session, TELEMETRY) is True
    # At most once per lookup function's validator; the SDK alone validates at every lookup.
    assert len(validations) <= len(lookups(sdk_line)) < 5 * len(lookups(sdk_line))

    session.sagemaker_config = BROKEN
    for lookup in lookups(sdk_line):
        for _ in range(2):  # a refused config is not remembered as accepted
            with pytest.raises(jsonschema.ValidationError, match="NoSuchResource"):
                lookup(session, TELEMETRY)
