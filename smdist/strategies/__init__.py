"""The distribution strategies, one module each, and the tagged union over them.

Adding a strategy: one new module and one line in ``STRATEGIES``. SMP (``kind: sdmp``) is itself
a union of two models, one per library major, chosen by ``version``.
"""

from typing import Annotated, Union

from pydantic import Field, ValidationError

from smdist.errors import Problem
from smdist.strategies import smp_base
from smdist.strategies.base import Strategy
from smdist.strategies.ddp import PyTorchDDP
from smdist.strategies.horovod import Horovod
from smdist.strategies.mwms import MWMS
from smdist.strategies.parameter_server import ParameterServer
from smdist.strategies.sddp import SDDP
from smdist.strategies.sdmp import SDMP, AnySMP, ModelParallel, SMPv1, SMPv2

STRATEGIES: dict[str, type[Strategy]] = {
    "mwms": MWMS,
    "horovod": Horovod,
    "pytorch_ddp": PyTorchDDP,
    "sddp": SDDP,
    "sdmp": ModelParallel,
    "parameter_server": ParameterServer,
}
# The tagged union a job file's ``strategy`` is read as: every model above, SMP as the union
# of its two library majors.
_MODELS = tuple(AnySMP if model is ModelParallel else model for model in STRATEGIES.values())
AnyStrategy = Annotated[
    Union[_MODELS],  # noqa: UP007 - built from the registry at run time
    Field(discriminator="kind", description="the distribution strategy, chosen by `kind`"),
]


def validation_problems(exc: ValidationError, prefix: str = "") -> list[Problem]:
    """A job's validation errors as Problems, with the union tags users never wrote removed."""
    return smp_base.validation_problems(exc, prefix, kinds=frozenset(STRATEGIES))


__all__ = [
    "MWMS",
    "SDDP",
    "SDMP",
    "STRATEGIES",
    "AnyStrategy",
    "Horovod",
    "ModelParallel",
    "ParameterServer",
    "PyTorchDDP",
    "SMPv1",
    "SMPv2",
    "Strategy",
    "validation_problems",
]
