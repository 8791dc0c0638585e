"""A job's ``strategy``, validated by the model its ``kind`` names, and the union type of all.

Both follow from the registry (``smdist.strategies.REGISTRY``). Validation imports and builds
only the model the ``kind`` names; the union over every model, which the JSON Schema is made
from, builds them all.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field
from pydantic_core import PydanticCustomError, PydanticKnownError

from smdist.strategies.base import Strategy
from smdist.strategies.registry import STRATEGIES, kinds, strategy_model


def validate_strategy(value: Any) -> Strategy:
    """A job's ``strategy``: a mapping or a strategy object, validated by the model its ``kind``
    names. Errors read as a tagged union's would, so pydantic places them under ``strategy``."""
    if not isinstance(value, dict | Strategy):
        raise PydanticKnownError("model_attributes_type")
    model = chosen_model(value)
    if model is not None:
        return model.model_validate(value)
    if isinstance(value, dict) and "kind" not in value:
        raise PydanticCustomError(
            "kind_missing", "needs a 'kind' key naming one of: {kinds}", {"kinds": kinds()}
        )
    expected = ", ".join(map(repr, STRATEGIES))
    kind = _kind_of(value)
    context = {"discriminator": "'kind'", "tag": str(kind), "expected_tags": expected}
    raise PydanticKnownError("union_tag_invalid", context)


def any_strategy() -> Any:
    """The tagged union over every registered model, for the JSON Schema (builds all of them).
    A model that is several by a field of its own (SMP's ``version``) gives its own union."""
    members = tuple(strategy_model(kind).union_member() for kind in STRATEGIES)
    return Annotated[
        Union[members],  # noqa: UP007 - built from the registry at run time
        Field(discriminator="kind", description="the distribution strategy, chosen by `kind`"),
    ]


def chosen_model(value: Any) -> type[Strategy] | None:
    """The model that validates ``value`` as a strategy; None when its kind names none."""
    if not isinstance(value, dict | Strategy):
        return None
    kind = _kind_of(value)
    if not isinstance(kind, str) or kind not in STRATEGIES:
        return None
    return strategy_model(kind).model_for(value)


def _kind_of(value: dict | Strategy) -> Any:
    return value.get("kind") if isinstance(value, dict) else value.kind
