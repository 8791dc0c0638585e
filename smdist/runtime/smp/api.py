"""The stand-in's ``smdistributed.modelparallel.torch`` API (imported as ``smp``).

Reached through ``smdist.runtime.smp.import_smp()`` when the real library is missing; see the
package docstring for what it reproduces and what it does not. This module imports torch at
import time (its model class is a ``torch.nn.Module``), so only import it where torch is
installed.

Topology: ranks and groups are the library's for the configured ``pipeline_parallel_degree``,
``tensor_parallel_degree`` and ``placement_strategy`` (``smdist.runtime.smp.topology``), with a
torch.distributed process group per group, created in the library's order. Every rank still
computes the whole model; gradients are averaged over the microbatches of a step and then over
the rank's data-parallel group (torch DDP over ``get_dp_process_group()`` underneath).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist

from smdist.runtime.smp.config import parse_mp_parameters
from smdist.runtime.smp.microbatches import StepOutput
from smdist.runtime.smp.model import DistributedModel, DistributedOptimizer
from smdist.runtime.smp.state import (
    DP_GROUP,
    MP_GROUP,
    PP_GROUP,
    RDP_GROUP,
    TP_GROUP,
    WORLD,
    CommGroup,
    RankType,
    note_once,
    require_init,
    require_topology,
    state,
)
from smdist.runtime.smp.step import step
from smdist.runtime.smp.topology import Topology
from smdist.runtime.torch_training import ensure_rendezvous_env, release_before_exit

__all__ = [
    "DP_GROUP",
    "MP_GROUP",
    "PP_GROUP",
    "RDP_GROUP",
    "TP_GROUP",
    "WORLD",
    "CommGroup",
    "DistributedModel",
    "DistributedOptimizer",
    "RankType",
    "StepOutput",
    "allgather",
    "barrier",
    "broadcast",
    "delay_param_initialization",
    "dp_barrier",
    "dp_rank",
    "dp_size",
    "get_dp_group",
    "get_dp_process_group",
    "get_mp_group",
    "get_mp_process_group",
    "get_pp_group",
    "get_pp_process_group",
    "get_rdp_group",
    "get_rdp_process_group",
    "get_tp_group",
    "get_tp_process_group",
    "get_world_process_group",
    "init",
    "is_initialized",
    "is_tracing",
    "load",
    "local_rank",
    "local_size",
    "mp_barrier",
    "mp_rank",
    "mp_size",
    "partition",
    "pp_barrier",
    "pp_rank",
    "pp_size",
    "rank",
    "rdp_barrier",
    "rdp_rank",
    "rdp_size",
    "recv_from",
    "save",
    "send",
    "size",
    "state",
    "step",
    "tensor_parallelism",
    "tp_barrier",
    "tp_rank",
    "tp_size",
]

# --- initialisation and ranks -------------------------------------------------------------


def init(config: dict | str | None = None) -> None:
    """Read the SMP config (``config``, else SM_HP_MP_PARAMETERS) and join the process group."""
    cfg = parse_mp_parameters(config)
    if not dist.is_initialized():
        ensure_rendezvous_env()
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        release_before_exit(_release_model)
    state.rank, state.size = dist.get_rank(), dist.get_world_size()
    cfg.check_world_size(state.size)
    topology = Topology(
        state.size,
        cfg.pipeline_parallel_degree,
        cfg.tensor_parallel_degree,
        cfg.placement_strategy,
    )
    state.process_groups = _create_process_groups(topology)
    state.topology, state.cfg = topology, cfg
    state.local_rank, state.local_size = _local_position()
    note_once(
        "smp: SageMaker's model parallel library is not installed here; a local stand-in gives "
        f"the {state.size} ranks SMP's ranks and groups (dp_size()={topology.dp_size}, "
        f"pp_size()={topology.pp_size}, tp_size()={topology.tp_size}, placement_strategy="
        f"{cfg.placement_strategy!r}) but every rank computes the whole model "
        f"(microbatches={cfg.microbatches})"
    )
    if cfg.model_parallel_degree > 1 or cfg.sharded_data_parallel_degree > 1:
        note_once(
            f"smp: pipeline_parallel_degree={cfg.pipeline_parallel_degree}, "
            f"tensor_parallel_degree={cfg.tensor_parallel_degree} and "
            f"sharded_data_parallel_degree={cfg.sharded_data_parallel_degree} split the model "
            "only on SageMaker; here gradients are averaged over each data-parallel group"
        )
    if cfg.unknown:
        note_once(f"smp: unknown SMP parameters ignored: {', '.join(cfg.unknown)}")


def _release_model() -> None:
    state.model = None
    state.optimizer = None
    state.process_groups = {}


def _create_process_groups(topology: Topology) -> dict[CommGroup, dist.ProcessGroup]:
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


def _local_position() -> tuple[int, int]:
    """(local rank, local size): the ranks that share this rank's node."""
    from smdist.runtime.environments import detect

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


def _process_group(kind: CommGroup) -> dist.ProcessGroup:
    require_init("smp process groups")
    return dist.group.WORLD if kind is WORLD else state.process_groups[kind]


def get_dp_process_group() -> dist.ProcessGroup:
    return _process_group(DP_GROUP)


def get_mp_process_group() -> dist.ProcessGroup:
    return _process_group(MP_GROUP)


def get_pp_process_group() -> dist.ProcessGroup:
    return _process_group(PP_GROUP)


def get_tp_process_group() -> dist.ProcessGroup:
    return _process_group(TP_GROUP)


def get_rdp_process_group() -> dist.ProcessGroup:
    return _process_group(RDP_GROUP)


# --- communication ------------------------------------------------------------------------

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
        dist.barrier(group=_process_group(group))


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
    dist.all_gather_object(gathered, obj, group=_process_group(group))
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


# --- saving and loading -------------------------------------------------------------------


def _file_name(f: Any, partial: bool, what: str) -> str:
    if not isinstance(f, str):
        raise TypeError(
            f"{what} accepts only a string file name, as the real library does; got "
            f"{type(f).__name__} (pass str(path))"
        )
    return f"{f}_{mp_rank()}" if partial else f


def save(
    obj: Any, f: str, partial: bool = True, pickle_module: Any = None, pickle_protocol: int = 2
) -> None:
    """torch.save; with ``partial=True`` each model-parallel rank writes ``<f>_<mp_rank>``, and
    a full file (``partial=False``) is written by rank 0 alone, as the library does."""
    options: dict[str, Any] = {"pickle_protocol": pickle_protocol}
    if pickle_module is not None:
        options["pickle_module"] = pickle_module
    name = _file_name(f, partial, "smp.save")
    if partial or state.rank == 0:
        torch.save(obj, name, **options)


def load(
    f: str,
    map_location: Any = None,
    pickle_module: Any = None,
    pickle_load_args: dict | None = None,
    partial: bool = True,
) -> Any:
    """torch.load of what ``smp.save`` wrote (torch's default ``weights_only`` applies; pass
    ``pickle_load_args={"weights_only": False}`` for arbitrary objects you trust)."""
    options: dict[str, Any] = dict(pickle_load_args or {})
    if pickle_module is not None:
        options["pickle_module"] = pickle_module
    return torch.load(_file_name(f, partial, "smp.load"), map_location=map_location, **options)


# --- model-creation contexts without a local effect ---------------------------------------


@contextlib.contextmanager
def partition(index: int) -> Iterator[None]:
    """Manual placement on SageMaker; every module stays on this rank here."""
    cfg = require_init("smp.partition")
    if not 0 <= index < cfg.pipeline_parallel_degree:
        raise ValueError(
            f"smp.partition({index}): the index must be below pipeline_parallel_degree="
            f"{cfg.pipeline_parallel_degree}"
        )
    yield


@contextlib.contextmanager
def tensor_parallelism(enabled: bool = True, **tensor_parallel_config: Any) -> Iterator[None]:
    """Marks modules for tensor parallelism on SageMaker; no effect with tp_size() == 1."""
    yield


@contextlib.contextmanager
def delay_param_initialization(enabled: bool = True) -> Iterator[None]:
    """Defers parameter initialisation on SageMaker; parameters initialise at once here."""
    yield
