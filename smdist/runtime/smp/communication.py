"""The stand-in's communication over its groups: barriers, ``allgather``, ``broadcast``,
``send`` and ``recv_from`` (objects, through torch.distributed)."""

from __future__ import annotations

from typing import Any

import torch.distributed as dist

from smdist.runtime.smp.process_groups import (
    get_dp_group,
    get_mp_group,
    get_pp_group,
    get_rdp_group,
    get_tp_group,
    process_group,
    size,
)
from smdist.runtime.smp.state import (
    DP_GROUP,
    MP_GROUP,
    PP_GROUP,
    RDP_GROUP,
    TP_GROUP,
    WORLD,
    CommGroup,
    RankType,
    require_init,
    state,
)

_GROUP_RANKS = {
    WORLD: lambda: list(range(size())),
    DP_GROUP: get_dp_group,
    MP_GROUP: get_mp_group,
    PP_GROUP: get_pp_group,
    TP_GROUP: get_tp_group,
    RDP_GROUP: get_rdp_group,
}
_RANK_TYPE_GROUP = {
    RankType.WORLD_RANK: WORLD,
    RankType.DP_RANK: DP_GROUP,
    RankType.MP_RANK: MP_GROUP,
    RankType.PP_RANK: PP_GROUP,
    RankType.TP_RANK: TP_GROUP,
    RankType.RDP_RANK: RDP_GROUP,
}


def _members(group: CommGroup) -> list[int]:
    require_init("smp communication")
    return _GROUP_RANKS[group]()


def barrier(group: CommGroup = WORLD) -> None:
    if len(_members(group)) > 1:
        dist.barrier(group=process_group(group))


def dp_barrier() -> None:
    barrier(DP_GROUP)


def rdp_barrier() -> None:
    barrier(RDP_GROUP)


def mp_barrier() -> None:
    barrier(MP_GROUP)


def pp_barrier() -> None:
    barrier(PP_GROUP)


def tp_barrier() -> None:
    barrier(TP_GROUP)


def allgather(obj: Any, group: CommGroup = WORLD) -> list[Any]:
    """Every member's ``obj``, in the order of the members' ranks in the group."""
    members = _members(group)
    if len(members) == 1:
        return [obj]
    gathered: list[Any] = [None] * len(members)
    dist.all_gather_object(gathered, obj, group=process_group(group))
    return gathered


def _global_rank(peer: int, rank_type: RankType) -> int:
    members = _members(_RANK_TYPE_GROUP[rank_type])
    if not 0 <= peer < len(members):
        raise ValueError(
            f"rank {peer} of type {rank_type} does not exist: this rank's group of that type "
            f"has {len(members)} members"
        )
    return members[peer]


def send(obj: Any, dest_rank: int, rank_type: RankType) -> None:
    """Send ``obj`` to ``dest_rank`` (counted in ``rank_type``'s group); it calls
    ``recv_from``."""
    dist.send_object_list([obj], dst=_global_rank(dest_rank, rank_type))


def broadcast(obj: Any, group: CommGroup = WORLD) -> None:
    """Send ``obj`` to the other members of ``group``; they receive it with ``recv_from``."""
    for member in _members(group):
        if member != state.rank:
            dist.send_object_list([obj], dst=member)


def recv_from(src_rank: int, rank_type: RankType = RankType.WORLD_RANK) -> Any:
    """Receive what ``src_rank`` (counted in ``rank_type``'s group) sent with ``send`` or
    ``broadcast``."""
    box: list[Any] = [None]
    dist.recv_object_list(box, src=_global_rank(src_rank, rank_type))
    return box[0]
