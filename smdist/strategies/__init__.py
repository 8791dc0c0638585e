"""The distribution strategies, one module each, and the registry that names them by ``kind``.

Adding a strategy: one new module and one line in ``STRATEGIES``. The registry names each model
by its import path, so that a job imports and builds only the strategy its ``kind`` names:
building all six pydantic validators for every ``smdist plan`` would cost more than planning
(bench/bench_plan.py). SMP (``kind: sdmp``) is itself two models, one per library major, chosen
by ``version`` (``ModelParallel.model_for``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field
from pydantic_core import PydanticCustomError, PydanticKnownError

from smdist.strategies.base import Strategy

if TYPE_CHECKING:  # pragma: no cover
    from smdist.strategies.ddp import PyTorchDDP
    from smdist.strategies.horovod import Horovod
    from smdist.strategies.mwms import MWMS
    from smdist.strategies.parameter_server import ParameterServer
    from smdist.strategies.sddp import SDDP
    from smdist.strategies.sdmp import SDMP, ModelParallel, SMPv1, SMPv2

STRATEGIES: dict[str, str] = {  # kind -> "module:Model"
    "mwms": "smdist.strategies.mwms:MWMS",
    "horovod": "smdist.strategies.horovod:Horovod",
    "pytorch_ddp": "smdist.strategies.ddp:PyTorchDDP",
    "sddp": "smdist.strategies.sddp:SDDP",
    "sdmp": "smdist.strategies.sdmp:ModelParallel",
    "parameter_server": "smdist.strategies.parameter_server:ParameterServer",
}
# The public names of the strategy modules, imported when first asked for.
_EXPORTS = {
    "MWMS": "smdist.strategies.mwms",
    "Horovod": "smdist.strategies.horovod",
    "PyTorchDDP": "smdist.strategies.ddp",
    "SDDP": "smdist.strategies.sddp",
    "SDMP": "smdist.strategies.sdmp",
    "SMPv1": "smdist.strategies.sdmp",
    "SMPv2": "smdist.strategies.sdmp",
    "ModelParallel": "smdist.strategies.sdmp",
    "ParameterServer": "smdist.strategies.parameter_server",
}


def strategy_model(kind: str) -> type[Strategy]:
    """The model registered for ``kind`` (imported on first use)."""
    module, _, name = STRATEGIES[kind].partition(":")
    return getattr(importlib.import_module(module), name)


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
    """The tagged union over every registered model, for the JSON Schema (builds all of them)."""
    from smdist.strategies.sdmp import AnySMP

    models = [strategy_model(kind) for kind in STRATEGIES]
    members = tuple(AnySMP if model.__name__ == "ModelParallel" else model for model in models)
    return Annotated[
        Union[members],  # noqa: UP007 - built from the registry at run time
        Field(discriminator="kind", description="the distribution strategy, chosen by `kind`"),
    ]


def kinds() -> str:
    """The registered kinds, for messages: ``horovod, mwms, ...``."""
    return ", ".join(sorted(STRATEGIES))


def _kind_of(value: dict | Strategy) -> Any:
    return value.get("kind") if isinstance(value, dict) else value.kind


def chosen_model(value: Any) -> type[Strategy] | None:
    """The model that validates ``value`` as a strategy; None when its kind names none."""
    if not isinstance(value, dict | Strategy):
        return None
    kind = _kind_of(value)
    if not isinstance(kind, str) or kind not in STRATEGIES:
        return None
    return strategy_model(kind).model_for(value)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'smdist.strategies' has no attribute {name!r}")


__all__ = [
    "MWMS",
    "SDDP",
    "SDMP",
    "STRATEGIES",
    "Horovod",
    "ModelParallel",
    "ParameterServer",
    "PyTorchDDP",
    "SMPv1",
    "SMPv2",
    "Strategy",
    "any_strategy",
    "strategy_model",
    "validate_strategy",
    "chosen_model",
    "kinds",
]
