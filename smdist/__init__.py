"""smdist: typed, pre-checked distributed training on Amazon SageMaker, testable on a laptop.

The public API loads lazily so that ``import smdist`` stays light (no pydantic models built, no
sagemaker / boto3 / torch / tensorflow) and so that the bundled ``smdist.runtime`` can be
imported inside a training container without the rest of the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from smdist.strategies import STRATEGY_NAMES  # the registry alone: imports nothing heavy
from smdist.version import __version__ as __version__

_EXPORTS = {
    "JobSpec": "smdist.spec.job",
    "Code": "smdist.spec.job",
    "Checkpoint": "smdist.spec.job",
    "Spot": "smdist.spec.job",
    "Network": "smdist.spec.job",
    "load": "smdist.checks.reading",
    "Cluster": "smdist.spec.cluster",
    "Plan": "smdist.planning.plan",
    "plan": "smdist.planning.plan",
    "SpecError": "smdist.errors",
    "SetupError": "smdist.errors",
    "fit": "smdist.fitting",
    "tune": "smdist.tuning",
    "Tuning": "smdist.spec.tuning",
    "TuningResult": "smdist.backends.tuning_results",
    "model_trainer": "smdist.backends.sagemaker.v3.trainer",
    "model_trainer_distributed": "smdist.backends.sagemaker.v3.trainer",
}
# Every registered strategy's public names (MWMS, ParameterServer, SMPv1, ...), from the registry.
# update(), not |= (3.9): a ready script loads this on the image's Python (3.8 and up).
_EXPORTS.update(dict.fromkeys(STRATEGY_NAMES, "smdist.strategies"))

__all__ = [
    "Checkpoint",
    "Cluster",
    "Code",
    "JobSpec",
    "Network",
    "Plan",
    "SetupError",
    "SpecError",
    "Spot",
    "fit",
    "load",
    "tune",
    "Tuning",
    "TuningResult",
    "model_trainer",
    "model_trainer_distributed",
    "plan",
    *STRATEGY_NAMES,
]

if TYPE_CHECKING:  # pragma: no cover
    from smdist.backends.sagemaker.v3.trainer import model_trainer, model_trainer_distributed
    from smdist.backends.tuning_results import TuningResult
    from smdist.checks.reading import load
    from smdist.errors import SetupError, SpecError
    from smdist.fitting import fit
    from smdist.planning.plan import Plan, plan
    from smdist.spec.cluster import Cluster
    from smdist.spec.job import Checkpoint, Code, JobSpec, Network, Spot
    from smdist.spec.tuning import Tuning

    # Re-exported (X as X): the strategies' names, as the registry lists them (test_registry).
    from smdist.strategies import MWMS as MWMS
    from smdist.strategies import SDDP as SDDP
    from smdist.strategies import SDMP as SDMP
    from smdist.strategies import Horovod as Horovod
    from smdist.strategies import ModelParallel as ModelParallel
    from smdist.strategies import ParameterServer as ParameterServer
    from smdist.strategies import PyTorchDDP as PyTorchDDP
    from smdist.strategies import SMPv1 as SMPv1
    from smdist.strategies import SMPv2 as SMPv2
    from smdist.tuning import tune


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'smdist' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
