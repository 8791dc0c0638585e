"""The pydantic base every smdist config model shares.

Unknown keys are rejected (a typo such as ``process_per_host`` must never be dropped silently,
as the SageMaker SDK drops unknown distribution keys) and the error suggests the closest valid
key, which pydantic's own ``extra="forbid"`` message does not.

Values are strict: pydantic's lax mode would read ``max_run: true`` as 1 second and
``instance_count: "2"`` or ``2.0`` as 2, so a slip in a hand-edited file would change the job
instead of being pointed out. Strict mode still takes nested dicts for models, strings for
``Literal`` choices and ints where a float is meant; free-form values (hyperparameters) are
typed ``Any``-like unions and stay as written.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from smdist.errors import suggest

UNKNOWN_KEY = "unknown_key"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        shown = {field.alias or name for name, field in cls.model_fields.items()}
        accepted = shown | set(cls.model_fields)
        unknown = [key for key in data if key not in accepted]
        if unknown:
            key = unknown[0]
            close = suggest(str(key), shown, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            message = f"unknown key {key!r}; {hint}valid keys: {', '.join(sorted(shown))}"
            # The template is pre-rendered: escape braces so pydantic does not format it again.
            template = message.replace("{", "{{").replace("}", "}}")
            raise PydanticCustomError(UNKNOWN_KEY, template, {"key": key})
        return data
