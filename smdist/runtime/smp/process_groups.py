"""This rank's place in the stand-in's topology: its ranks, the members of its groups, and
the torch.distributed process group of each kind (created by ``smp.init()``)."""

from __future__ import annotations

from typing import Any

import torch.distributed as dist

from smdist.runtime.environments import detect
from smdist.runtime.smp.state import (
    DP_GROUP,
    MP_GROUP,
    PP_GROUP,
    RDP_GROUP,
    TP_GROUP,
    WORLD,
    CommGroup,
    require_init,
    require_topology,
    state,
)
from smdist.runtime.smp.topology import Topology


def create_process_groups(topology: Topology) -> dict[CommGroup, dist.ProcessGroup]:
    """This rank's process group of each kind. Every rank creates every group (new_group is
    collective), in the library's order: DP, MP, PP, TP, RDP."""
    everything = {
        DP_GROUP: topology.dp_groups(),
        MP_GROUP: topology.mp_groups(),
        PP_GROUP: topology.pp_groups(),
        TP_GROUP: topology.tp_groups(),
        RDP_GROUP: topology.rdp_groups(),
    }
    mine: dict[CommGroup, dist.ProcessGroup] = {}
    for kind, groups in everything.items():
        for ranks in groups:
            group = dist.new_group(ranks=ranks)
            if state.rank in ranks:
                mine[kind] = group
    return mine


def local_position() -> tuple[int, int]:
    """(local rank, local size): the ranks that share this rank's node."""
    environment = detect()
    mine = (environment.node_rank(), environment.local_rank())
    everyone: list[Any] = [None] * state.size
    dist.all_gather_object(everyone, mine)
    return mine[1], sum(1 for node, _ in everyone if node == mine[0])


def is_initialized() -> bool:
    return state.initialized


def is_tracing() -> bool:
    return False  # the stand-in never traces the model


def rank() -> int:
    require_init("smp.rank()")
    return state.rank


def size() -> int:
    require_init("smp.size()")
    return state.size


def local_rank() -> int:
    require_init("smp.local_rank()")
    return state.local_rank


def local_size() -> int:
    require_init("smp.local_size()")
    return state.local_size


def dp_rank() -> int:
    """Rank in the data-parallel group (the ranks holding the same pipeline stage)."""
    return require_topology("smp.dp_rank()").dp_rank(state.rank)


def dp_size() -> int:
    return require_topology("smp.dp_size()").dp_size


def rdp_rank() -> int:
    """Rank in the reduced data-parallel group (same pipeline stage and tensor slice)."""
    return require_topology("smp.rdp_rank()").rdp_rank(state.rank)


def rdp_size() -> int:
    return require_topology("smp.rdp_size()").rdp_size


def mp_rank() -> int:
    """Rank in the model-parallel group (the ranks holding one model replica)."""
    return require_topology("smp.mp_rank()").mp_rank(state.rank)


def mp_size() -> int:
    return require_topology("smp.mp_size()").mp_size


def pp_rank() -> int:
    return require_topology("smp.pp_rank()").pp_rank(state.rank)


def pp_size() -> int:
    return require_topology("smp.pp_size()").pp_size


def tp_rank() -> int:
    return require_topology("smp.tp_rank()").tp_rank(state.rank)


def tp_size() -> int:
    return require_topology("smp.tp_size()").tp_size


# Groups are lists of global ranks, ordered by rank in the group; the optional arguments name
# another group of the same kind, as the library's do.


def get_dp_group(pp_rank: int | None = None) -> list[int]:
    """The ranks holding pipeline stage ``pp_rank`` (default: this rank's)."""
    topology = require_topology("smp.get_dp_group()")
    return topology.dp_group(topology.pp_rank(state.rank) if pp_rank is None else pp_rank)


def get_mp_group(rdp_rank: int | None = None) -> list[int]:
    """The ranks holding model replica ``rdp_rank`` between them (default: this rank's)."""
    topology = require_topology("smp.get_mp_group()")
    return topology.mp_group(topology.rdp_rank(state.rank) if rdp_rank is None else rdp_rank)


def get_pp_group(dp_rank: int | None = None) -> list[int]:
    """The pipeline of the ranks with data-parallel rank ``dp_rank`` (default: this rank's)."""
    topology = require_topology("smp.get_pp_group()")
    return topology.pp_group(topology.dp_rank(state.rank) if dp_rank is None else dp_rank)


def get_tp_group(pp_rank: int | None = None, rdp_rank: int | None = None) -> list[int]:
    topology = require_topology("smp.get_tp_group()")
    return topology.tp_group(
        topology.pp_rank(state.rank) if pp_rank is None else pp_rank,
        topology.rdp_rank(state.rank) if rdp_rank is None else rdp_rank,
    )


def get_rdp_group(pp_rank: int | None = None, tp_rank: int | None = None) -> list[int]:
    topology = require_topology("smp.get_rdp_group()")
    return topology.rdp_group(
        topology.pp_rank(state.rank) if pp_rank is None else pp_rank,
        topology.tp_rank(state.rank) if tp_rank is None else tp_rank,
    )


def get_world_process_group() -> dist.ProcessGroup:
    require_init("smp.get_world_process_group()")
    return dist.group.WORLD


def process_group(kind: CommGroup) -> dist.ProcessGroup:
    require_init("smp process groups")
    return dist.group.WORLD if kind is WORLD else state.process_groups[kind]


def get_dp_process_group() -> dist.ProcessGroup:
    return process_group(DP_GROUP)


def get_mp_process_group() -> dist.ProcessGroup:
    return process_group(MP_GROUP)


def get_pp_process_group() -> dist.ProcessGroup:
    return process_group(PP_GROUP)


def get_tp_process_group() -> dist.ProcessGroup:
    return process_group(TP_GROUP)


def get_rdp_process_group() -> dist.ProcessGroup:
    return process_group(RDP_GROUP)
