"""The stand-in's module state: what ``smp.state`` holds, the group and rank enums, and the
checks every API call shares (``smp.init()`` first; notes said once)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smdist.runtime.smp.config import SMPConfig
from smdist.runtime.smp.topology import Topology
from smdist.runtime.torch_training import say

if TYPE_CHECKING:
    import torch

PARTIAL_KEY = "_smp_is_partial"


class CommGroup(enum.Enum):
    WORLD = 0
    MP_GROUP = 1
    DP_GROUP = 2
    TP_GROUP = 3
    PP_GROUP = 4
    RDP_GROUP = 5


WORLD = CommGroup.WORLD
MP_GROUP = CommGroup.MP_GROUP
DP_GROUP = CommGroup.DP_GROUP
TP_GROUP = CommGroup.TP_GROUP
PP_GROUP = CommGroup.PP_GROUP
RDP_GROUP = CommGroup.RDP_GROUP


class RankType(enum.Enum):
    WORLD_RANK = 0
    MP_RANK = 1
    DP_RANK = 2
    TP_RANK = 3
    PP_RANK = 4
    RDP_RANK = 5


@dataclass
class _State:
    """What ``smp.state`` holds after ``smp.init()``."""

    cfg: SMPConfig | None = None
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    topology: Topology | None = None
    # CommGroup -> this rank's torch.distributed group of that kind (WORLD excluded)
    process_groups: dict[CommGroup, Any] = field(default_factory=dict)
    # The one DistributedModel (smdist.runtime.smp.model, which imports this module).
    model: torch.nn.Module | None = None
    optimizer: torch.optim.Optimizer | None = None
    microbatch: int = 0
    in_step: bool = False
    steps_run: int = 0
    announced: set[str] = field(default_factory=set)

    @property
    def initialized(self) -> bool:
        return self.cfg is not None


state = _State()


def require_init(what: str) -> SMPConfig:
    if state.cfg is None:
        raise RuntimeError(f"{what} needs smp.init() to be called first")
    return state.cfg


def require_topology(what: str) -> Topology:
    require_init(what)
    assert state.topology is not None  # set together with cfg by smp.init()
    return state.topology


def note_once(message: str) -> None:
    if message not in state.announced and state.rank == 0:
        state.announced.add(message)
        say(message)
