"""Each distinct SageMaker SDK config validated once per process, not at every config lookup.

Both SDK lines validate their defaults config (smdist's telemetry opt-out) against the config
schema at every config lookup, and ``jsonschema.validate`` first checks that schema against JSON
Schema's meta-schema: a quarter of a second each time on a small machine, a dozen to twenty
times per submit. Validating the same content against the same schema always gives the same
answer, so each validator remembers what it has accepted; a config it has not seen, or one that
fails, is validated (and refused) as before.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable
from typing import Any

Validate = Callable[..., None]
_MARK = "_smdist_validates_once"


def validating_once(original: Validate) -> Validate:
    """``original`` (a ``validate_sagemaker_config``), remembering the configs it accepted."""
    if getattr(original, _MARK, False):
        return original
    accepted: set[str] = set()

    def validate_once(sagemaker_config: dict | None = None) -> None:
        key = json.dumps(sagemaker_config, sort_keys=True, default=str)
        if key not in accepted:
            original(sagemaker_config)
            accepted.add(key)

    setattr(validate_once, _MARK, True)
    return validate_once


def replace_in_modules(defined_in: str, importers: tuple[str, ...]) -> None:
    """Make ``defined_in.validate_sagemaker_config`` validate once, there and in the
    ``importers`` that took the same function by name (those not installed are skipped)."""
    original = importlib.import_module(defined_in).validate_sagemaker_config
    once = validating_once(original)
    for name in (defined_in, *importers):
        with contextlib.suppress(ImportError):
            module = importlib.import_module(name)
            if getattr(module, "validate_sagemaker_config", None) is original:
                module.validate_sagemaker_config = once


def replace_static_method(owner: Any) -> None:
    """Make ``owner.validate_sagemaker_config`` (a static method) validate once."""
    original = owner.__dict__["validate_sagemaker_config"].__func__
    owner.validate_sagemaker_config = staticmethod(validating_once(original))


def validate_v2_configs_once() -> None:
    """SDK v2: its one validation function and the modules that imported it."""
    replace_in_modules(
        "sagemaker.config.config",
        ("sagemaker.utils", "sagemaker.session", "sagemaker.local.local_session"),
    )


def validate_v3_configs_once() -> None:
    """SDK v3: its config module's function (and its importers), the config manager's static
    method, and the intelligent-defaults helper's own copy."""
    replace_in_modules(
        "sagemaker.core.config.config",
        ("sagemaker.core.helper.session_helper", "sagemaker.core.local.local_session"),
    )
    replace_in_modules("sagemaker.core.utils.intelligent_defaults_helper", ())
    from sagemaker.core.config.config_manager import SageMakerConfig

    replace_static_method(SageMakerConfig)
