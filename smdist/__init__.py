"""smdist: typed, pre-checked distributed training on Amazon SageMaker, testable on a laptop.

The public API loads lazily so that ``import smdist`` stays light (no pydantic models built, no
sagemaker / boto3 / torch / tensorflow) and so that the bundled ``smdist.runtime`` can be
imported inside a training container without the rest of the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "JobSpec": "smdist.spec.job",
    "Code": "smdist.spec.job",
    "Checkpoint": "smdist.spec.job",
    "Spot": "smdist.spec.job",
    "Network": "smdist.spec.job",
    "load": "smdist.checks.reading",
    "Cluster": "smdist.spec.cluster",
    "MWMS": "smdist.strategies",
    "Horovod": "smdist.strategies",
    "PyTorchDDP": "smdist.strategies",
    "SDDP": "smdist.strategies",
    "SDMP": "smdist.strategies",
    "SMPv1": "smdist.strategies",
    "SMPv2": "smdist.strategies",
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

__all__ = [
    "Checkpoint",
    "Cluster",
    "Code",
    "Horovod",
    "JobSpec",
    "MWMS",
    "Network",
    "Plan",
    "PyTorchDDP",
    "SDDP",
    "SDMP",
    "SMPv1",
    "SMPv2",
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
    from smdist.strategies import MWMS, SDDP, SDMP, Horovod, PyTorchDDP, SMPv1, SMPv2
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
