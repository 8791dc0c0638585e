"""The SageMaker wire format for hyperparameters, as SageMaker Python SDK v2 sends them.

``CreateTrainingJob`` takes a string-to-string map; the SDK ``json.dumps`` every value (so a
string travels quoted: ``"\\"x\\""``, a bool as ``"true"``) and the container ``json.loads`` it
back. The API's limits on the map are named here, read from the catalogue's snapshot of the
service model, so that every check uses the same numbers.
"""

from __future__ import annotations

import json
from typing import Any

from smdist.catalog import api

# CreateTrainingJob's own limits, from botocore's service model (smdist/catalog/sagemaker_api.json).
MAX_HYPERPARAMETERS = api.field("hyperparameters").limit
MAX_KEY_LENGTH = api.field("hyperparameter_key").limit
MAX_VALUE_LENGTH = api.field("hyperparameter_value").limit
MAX_ENVIRONMENT_ENTRIES = api.field("environment").limit
MAX_ENVIRONMENT_KEY_LENGTH = api.field("environment_key").limit
MAX_ENVIRONMENT_VALUE_LENGTH = api.field("environment_value").limit


def encode(value: Any) -> str:
    return json.dumps(value)


def encode_hyperparameters(values: dict[str, Any]) -> dict[str, str]:
    return {str(key): encode(value) for key, value in values.items()}
