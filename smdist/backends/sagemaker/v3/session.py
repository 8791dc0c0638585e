"""The installed SageMaker Python SDK v3: its version, and a Session smdist configures.

The SDK is imported inside the functions: ``import smdist`` stays light, and this module imports
with SDK v2 installed (v2 and v3 cannot be installed together).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from smdist.backends.sagemaker.config_once import validate_v3_configs_once
from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError

# The SDK's "defaults" config, given explicitly: telemetry off, and no config file of the
# user's (~/.config/sagemaker) can change the job behind the plan's back.
SDK_CONFIG: dict[str, Any] = {
    "SchemaVersion": "1.0",
    "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}},
}


def sdk_version() -> str | None:
    """The installed ``sagemaker`` version, or None (v3's package has no ``__version__``)."""
    try:
        return metadata.version("sagemaker")
    except metadata.PackageNotFoundError:
        return None


def require_sdk_v3() -> None:
    """SpecError unless the SageMaker Python SDK 3.x (``sagemaker.train``) is importable."""
    version = sdk_version()
    if version is None or not version.startswith("3."):
        found = f"sagemaker {version} is installed" if version else "sagemaker is not installed"
        raise SpecError(
            [
                Problem(
                    "backend",
                    f"ModelTrainer needs the SageMaker Python SDK 3.x; {found}",
                    version,
                    "pip install 'sagemaker>=3,<4' (in an environment without SDK v2)",
                )
            ],
            CANNOT_RUN_HERE,
        )


def sagemaker_session(boto_session: Any, bucket: str) -> Any:
    """An SDK v3 Session over ``boto_session`` with ``bucket`` and telemetry off."""
    require_sdk_v3()
    from sagemaker.core.helper.session_helper import Session

    validate_v3_configs_once()
    return Session(boto_session=boto_session, default_bucket=bucket, sagemaker_config=SDK_CONFIG)


def as_session(session: Any, region: str | None, bucket: str) -> Any:
    """``session`` as a v3 Session: a v3 Session as given, a boto3 Session wrapped (default: a
    boto3 Session for ``region``)."""
    if session is not None and hasattr(session, "boto_session"):
        validate_v3_configs_once()  # the user's own Session looks its config up just as often
        return session
    import boto3

    boto = session or boto3.Session(region_name=region)
    return sagemaker_session(boto, bucket)
