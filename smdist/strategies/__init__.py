"""The distribution strategies, one module each, and the one registry that names them.

``REGISTRY`` (``smdist.strategies.registry``) is the only list of strategies: for each, the
``kind`` a job file writes, the module its model lives in, and the public names that module
gives (the model that validates the kind first). Everything that enumerates strategies follows
from it: the names ``smdist`` and ``smdist.strategies`` export, the tagged union that validates
a job's ``strategy`` and the JSON Schema built from it (``smdist.strategies.union``), the kinds
that error messages and the CLI offer, and the checks that every strategy has its README row,
example, entry point and notebook (``tests/unit/test_registry.py``). Adding a strategy: one new
module and one line in the registry.

What differs by strategy lives on the strategy (``smdist.strategies.base.Strategy``: methods
and class data), never in a switch on ``kind`` elsewhere.

This module imports nothing heavy: ``import smdist`` reads it for its exports. The registry
names each model by its module, so that a job imports and builds only the strategy its
``kind`` names: building all six pydantic validators for every ``smdist plan`` would cost more
than planning (bench/bench_plan.py). SMP (``kind: sdmp``) is itself two models, one per
library major, chosen by ``version`` (``ModelParallel.model_for``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from smdist.strategies.registry import (
    REGISTRY,
    STRATEGIES,
    STRATEGY_NAMES,
    Registered,
    kinds,
    strategy_model,
)

if TYPE_CHECKING:  # pragma: no cover - for editors; tests/unit/test_registry.py keeps it whole
    from smdist.strategies.base import Strategy as Strategy
    from smdist.strategies.ddp import PyTorchDDP as PyTorchDDP
    from smdist.strategies.horovod import Horovod as Horovod
    from smdist.strategies.mwms import MWMS as MWMS
    from smdist.strategies.parameter_server import ParameterServer as ParameterServer
    from smdist.strategies.sddp import SDDP as SDDP
    from smdist.strategies.sdmp import SDMP as SDMP
    from smdist.strategies.sdmp import ModelParallel as ModelParallel
    from smdist.strategies.sdmp import SMPv1 as SMPv1
    from smdist.strategies.sdmp import SMPv2 as SMPv2
    from smdist.strategies.union import any_strategy as any_strategy
    from smdist.strategies.union import chosen_model as chosen_model
    from smdist.strategies.union import validate_strategy as validate_strategy


# Imported when first asked for: the strategy modules and what needs pydantic.
_EXPORTS: dict[str, str] = {name: entry.module for entry in REGISTRY for name in entry.names}
# update(), not |= (3.9): ``import smdist`` runs this on the image's Python when an installed
# smdist runs a ready script there (Python 3.8: tests/integration/test_entry_point_pythons.py).
_EXPORTS.update(
    {
        "Strategy": "smdist.strategies.base",
        "any_strategy": "smdist.strategies.union",
        "chosen_model": "smdist.strategies.union",
        "validate_strategy": "smdist.strategies.union",
    }
)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'smdist.strategies' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


__all__ = [
    "REGISTRY",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "Registered",
    "kinds",
    "strategy_model",
    *_EXPORTS,
]
