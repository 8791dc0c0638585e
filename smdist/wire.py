"""The SageMaker wire format for hyperparameters, as SageMaker Python SDK v2 sends them.

``CreateTrainingJob`` takes a string-to-string map; the SDK ``json.dumps`` every value (so a
string travels quoted: ``"\\"x\\""``, a bool as ``"true"``) and the container ``json.loads`` it
back. Lengths are checked here because the API (and moto) accept what a real job then rejects.
"""

from __future__ import annotations

import json
from typing import Any

MAX_HYPERPARAMETERS = 100  # botocore: HyperParameters map max 100 entries
MAX_KEY_LENGTH = 256
MAX_VALUE_LENGTH = 2500
MAX_ENVIRONMENT_ENTRIES = 100  # botocore: TrainingEnvironmentMap max 100 entries
MAX_ENVIRONMENT_VALUE_LENGTH = 512


def encode(value: Any) -> str:
    return json.dumps(value)


def encode_hyperparameters(values: dict[str, Any]) -> dict[str, str]:
    return {str(key): encode(value) for key, value in values.items()}


def decode(value: str) -> Any:
    """What the container does with each value: JSON if it parses, else the raw string."""
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value
