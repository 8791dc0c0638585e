"""The one place that imports the SageMaker Python SDK (v2) and builds its sessions.

Importing ``sagemaker`` 2.x prints a deprecation banner, logs where it looked for config files
and replaces ``sys.excepthook`` with a rich traceback printer; its telemetry sends a request
per call unless opted out. smdist keeps all of that out of the user's process: the banner is
suppressed, the original hook is put back, config-file lookup is replaced by an explicit
config that opts out of telemetry (so a user's SDK defaults file cannot change a job behind
the plan's back), and the SDK's INFO chatter is lowered to warnings.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

from smdist.backends.aws_region import HOW_TO_SET, configured_region
from smdist.backends.sagemaker.config_once import validate_v2_configs_once
from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError

# The SDK's "defaults" config, given explicitly instead of read from ~/.config/sagemaker.
SDK_CONFIG: dict[str, Any] = {
    "SchemaVersion": "1.0",
    "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}},
}
_QUIET_LOGGERS = ("sagemaker", "sagemaker.config", "sagemaker.telemetry", "sagemaker_core")
# SDK modules that configure the root logger when imported; imported up front and contained.
_LAZY_MODULES = ("sagemaker.experiments._metrics", "sagemaker.aws_batch.training_queued_job")

_sdk: Any = None


@contextlib.contextmanager
def contained() -> Iterator[None]:
    """Undo what SDK code does to the process: its excepthook, root-logger handlers and level.

    Some SDK modules call ``logging.basicConfig(level=INFO)`` when first imported (lazily, in
    the middle of ``fit``), which would turn every library's INFO logs on in the user's process.
    """
    hook = sys.excepthook
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        sys.excepthook = hook
        root.setLevel(level)
        root.handlers[:] = handlers


def import_sagemaker() -> Any:
    """``import sagemaker`` (v2) without its banner, its excepthook or its INFO logs."""
    global _sdk
    if _sdk is not None:
        return _sdk
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
    with contained():
        try:
            import sagemaker
            import sagemaker.pytorch
            import sagemaker.tensorflow

            for module in _LAZY_MODULES:  # imported now, so their side effects are undone now
                with contextlib.suppress(ImportError):
                    importlib.import_module(module)
        except ImportError as exc:
            raise SpecError(
                [
                    Problem(
                        "backend",
                        f"the SageMaker backends need the SageMaker Python SDK 2.x ({exc})",
                        valid="pip install 'smdist[sagemaker-v2]' ('smdist[sagemaker]': SDK v3)",
                    )
                ],
                CANNOT_RUN_HERE,
            ) from None
    validate_v2_configs_once()
    version = getattr(sagemaker, "__version__", "0")
    if not version.startswith("2."):
        raise SpecError(
            [
                Problem(
                    "backend",
                    f"sagemaker {version} is installed; smdist drives the 2.x estimators",
                    valid="pip install 'sagemaker>=2.250,<3'",
                )
            ],
            CANNOT_RUN_HERE,
        )
    _sdk = sagemaker
    return sagemaker


def boto_session(region: str | None = None, boto: Any = None) -> Any:
    """A boto3 Session for ``region`` (or the one given), checked to have a region.

    With no ``region``, the configured one as every smdist command resolves it
    (``smdist.backends.aws_region``: ``AWS_REGION`` included, which boto3 alone ignores).
    """
    import boto3

    if boto is None:
        region = region or configured_region()
    session = boto or boto3.Session(region_name=region)
    if region and session.region_name != region:
        session = boto3.Session(
            region_name=region, botocore_session=getattr(session, "_session", None)
        )
    if not session.region_name:
        raise SpecError(
            [
                Problem(
                    "region",
                    "no AWS region is configured",
                    valid=f"e.g. us-west-2, set by {HOW_TO_SET}",
                )
            ],
            CANNOT_RUN_HERE,
        )
    return session


def sagemaker_session(boto: Any, bucket: str | None = None, local: bool = False) -> Any:
    """A SageMaker SDK session with telemetry off and no config files read."""
    sagemaker = import_sagemaker()
    if local:
        from sagemaker.local import LocalSession

        with contained():
            session = LocalSession(
                boto_session=boto, default_bucket=bucket, sagemaker_config=SDK_CONFIG
            )
        session.config = {"local": {"local_code": True}}
        return session
    return sagemaker.Session(boto_session=boto, default_bucket=bucket, sagemaker_config=SDK_CONFIG)


def leave_out_unset_volume_size(session: Any) -> None:
    """Make ``session``'s CreateTrainingJob leave out a ``VolumeSizeInGB`` of None.

    SDK v2's estimator always writes ``ResourceConfig.VolumeSizeInGB`` (its ``volume_size``),
    which SageMaker refuses on some instance types (``job_settings.volume_fields``). The estimator
    is given ``volume_size=None`` there, and this drops that None before the request is built,
    so that what is sent is the dry run's request. A size that is set is never touched.
    """

    def leave_out(params: dict[str, Any], **_: Any) -> None:
        resources = params.get("ResourceConfig")
        if isinstance(resources, dict) and resources.get("VolumeSizeInGB", 0) is None:
            del resources["VolumeSizeInGB"]

    session.sagemaker_client.meta.events.register_first(
        "provide-client-params.sagemaker.CreateTrainingJob", leave_out
    )


def estimator_class(plan_estimator: str) -> Any:
    """``sagemaker.pytorch.PyTorch`` or ``sagemaker.tensorflow.TensorFlow`` by dotted name."""
    import_sagemaker()
    module_name, _, class_name = plan_estimator.rpartition(".")
    return getattr(sys.modules[module_name], class_name)
