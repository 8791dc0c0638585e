"""The registry: the one list of strategies (see ``smdist.strategies``).

Standard library only: ``import smdist`` reads it for its exports, and the tagged union
(``smdist.strategies.union``) builds from it.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple


class Registered(NamedTuple):
    """One strategy: the ``kind`` a job file writes, the module its model lives in, and the
    public names that module gives, the model that validates ``kind`` first."""

    kind: str
    module: str
    names: tuple[str, ...]

    @property
    def model(self) -> str:
        return self.names[0]


REGISTRY: tuple[Registered, ...] = (
    Registered("mwms", "smdist.strategies.mwms", ("MWMS",)),
    Registered("horovod", "smdist.strategies.horovod", ("Horovod",)),
    Registered("pytorch_ddp", "smdist.strategies.ddp", ("PyTorchDDP",)),
    Registered("sddp", "smdist.strategies.sddp", ("SDDP",)),
    # One kind, two models (SMPv1, SMPv2) chosen by version; SDMP(version=...) builds either.
    Registered("sdmp", "smdist.strategies.sdmp", ("ModelParallel", "SDMP", "SMPv1", "SMPv2")),
    Registered("parameter_server", "smdist.strategies.parameter_server", ("ParameterServer",)),
)

STRATEGIES: dict[str, Registered] = {entry.kind: entry for entry in REGISTRY}
# Every public name of the strategy modules, as smdist and smdist.strategies export them.
STRATEGY_NAMES: tuple[str, ...] = tuple(name for entry in REGISTRY for name in entry.names)


def strategy_model(kind: str) -> Any:
    """The model registered for ``kind`` (imported on first use): a ``type[Strategy]``."""
    entry = STRATEGIES[kind]
    return getattr(importlib.import_module(entry.module), entry.model)


def kinds() -> str:
    """The registered kinds, for messages: ``horovod, mwms, ...``."""
    return ", ".join(sorted(STRATEGIES))
