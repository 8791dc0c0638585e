"""Which AWS Region a command works in, resolved the same way by every command.

boto3 reads ``AWS_DEFAULT_REGION`` and the profile's ``region`` but not ``AWS_REGION``, which
the AWS CLI v2, the other AWS SDKs and most CI systems set. smdist takes, first of: the value
given (``--region``), the job file's ``region:``, ``AWS_REGION``, then boto3's own chain
(``AWS_DEFAULT_REGION``, the profile). A dry run needs no configuration at all: with none it
shows the request for ``DRY_RUN_REGION`` and says so.
"""

from __future__ import annotations

import os

DRY_RUN_REGION = "us-east-1"
HOW_TO_SET = "region: in the job file, --region, AWS_REGION, or a profile's region"


def configured_region() -> str | None:
    """The region of this machine's AWS configuration, or None when there is none."""
    if os.environ.get("AWS_REGION"):
        return os.environ["AWS_REGION"]
    try:
        import botocore.session
    except ImportError:  # boto3 comes with the sagemaker extras only
        return os.environ.get("AWS_DEFAULT_REGION") or None
    try:
        return botocore.session.Session().get_config_variable("region") or None
    except Exception:  # noqa: BLE001 - a broken config file: no region, said by the caller
        return None


def resolve_region(*given: str | None) -> str | None:
    """The first of ``given`` that is set, else the configured region."""
    for value in given:
        if value:
            return value
    return configured_region()


def dry_run_region(*given: str | None) -> tuple[str, str | None]:
    """(the region a dry run shows, a note when it is the stand-in for a missing setting)."""
    region = resolve_region(*given)
    if region:
        return region, None
    return DRY_RUN_REGION, (
        f"no AWS region is configured: the request is shown for {DRY_RUN_REGION}; "
        f"a real submit needs {HOW_TO_SET}"
    )


__all__ = ["DRY_RUN_REGION", "HOW_TO_SET", "configured_region", "dry_run_region", "resolve_region"]
