"""The five distribution strategies, one module each, and the tagged union over them.

Adding a strategy: one new module and one line in ``STRATEGIES``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from smdist.strategies.base import Strategy
from smdist.strategies.ddp import PyTorchDDP
from smdist.strategies.horovod import Horovod
from smdist.strategies.mwms import MWMS
from smdist.strategies.sddp import SDDP
from smdist.strategies.sdmp import SDMP

STRATEGIES: dict[str, type[Strategy]] = {
    "mwms": MWMS,
    "horovod": Horovod,
    "pytorch_ddp": PyTorchDDP,
    "sddp": SDDP,
    "sdmp": SDMP,
}

AnyStrategy = Annotated[
    MWMS | Horovod | PyTorchDDP | SDDP | SDMP,
    Field(discriminator="kind", description="the distribution strategy, chosen by `kind`"),
]

__all__ = ["MWMS", "SDDP", "SDMP", "STRATEGIES", "AnyStrategy", "Horovod", "PyTorchDDP", "Strategy"]
