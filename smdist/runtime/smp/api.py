"""The stand-in's ``smdistributed.modelparallel.torch`` API (imported as ``smp``).

Reached through ``smdist.runtime.smp.import_smp()`` when the real library is missing; see the
package docstring for what it reproduces and what it does not. This module imports torch at
import time (its model class is a ``torch.nn.Module``), so only import it where torch is
installed.

Topology: every rank is a full data-parallel replica. ``dp_size()`` is the world size,
``mp_size()`` / ``pp_size()`` / ``tp_size()`` are 1, and gradients are averaged over the
microbatches of a step and then over all ranks (torch DDP underneath).
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
    _ALL_RANK_GROUPS,
    DP_GROUP,
    MP_GROUP,
    WORLD,
    CommGroup,
    RankType,
    note_once,
    require_init,
    state,
)
from smdist.runtime.smp.step import step
from smdist.runtime.torch_training import ensure_rendezvous_env, release_before_exit

__all__ = [
    "DP_GROUP",
    "MP_GROUP",
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
    "get_rdp_process_group",
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
    "pp_rank",
    "pp_size",
    "rank",
    "rdp_rank",
    "rdp_size",
    "recv_from",
    "save",
    "size",
    "state",
    "step",
    "tensor_parallelism",
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
    state.cfg = cfg
    state.local_rank, state.local_size = _local_position()
    note_once(
        "smp: SageMaker's model parallel library is not installed here; a local stand-in runs "
        f"every one of the {state.size} ranks as a full data-parallel replica "
        f"(microbatches={cfg.microbatches})"
    )
    if cfg.model_parallel_degree > 1 or cfg.sharded_data_parallel_degree > 1:
        note_once(
            f"smp: pipeline_parallel_degree={cfg.pipeline_parallel_degree}, "
            f"tensor_parallel_degree={cfg.tensor_parallel_degree} and "
            f"sharded_data_parallel_degree={cfg.sharded_data_parallel_degree} take effect only "
            "on SageMaker; here mp_size()=1 and dp_size()=size()"
        )
    if cfg.unknown:
        note_once(f"smp: unknown SMP parameters ignored: {', '.join(cfg.unknown)}")


def _release_model() -> None:
    state.model = None
    state.optimizer = None


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


dp_rank = rdp_rank = rank
dp_size = rdp_size = size


def mp_rank() -> int:
    require_init("smp.mp_rank()")
    return 0


def mp_size() -> int:
    require_init("smp.mp_size()")
    return 1


pp_rank = tp_rank = mp_rank
pp_size = tp_size = mp_size


def get_mp_group() -> list[int]:
    """The ranks holding this rank's model replica: only itself here."""
    return [rank()]


get_tp_group = get_pp_group = get_mp_group


def get_dp_group() -> list[int]:
    """The ranks holding replicas of the same partition: all of them here."""
    return list(range(size()))


get_rdp_group = get_dp_group


def get_world_process_group() -> dist.ProcessGroup:
    require_init("smp.get_world_process_group()")
    return dist.group.WORLD


get_dp_process_group = get_rdp_process_group = get_world_process_group


# --- communication ------------------------------------------------------------------------


def _spans_all(group: CommGroup) -> bool:
    require_init("smp communication")
    return group in _ALL_RANK_GROUPS and state.size > 1


def barrier(group: CommGroup = WORLD) -> None:
    if _spans_all(group):
        dist.barrier()


def dp_barrier() -> None:
    barrier(DP_GROUP)


def mp_barrier() -> None:
    barrier(MP_GROUP)


def allgather(obj: Any, group: CommGroup = WORLD) -> list[Any]:
    if not _spans_all(group):
        return [obj]
    gathered: list[Any] = [None] * state.size
    dist.all_gather_object(gathered, obj)
    return gathered


def broadcast(obj: Any, group: CommGroup = WORLD) -> None:
    """Send ``obj`` to the group; the others receive it with ``recv_from(sender)``."""
    if _spans_all(group):
        dist.broadcast_object_list([obj], src=state.rank)


def recv_from(src_rank: int, rank_type: RankType = RankType.WORLD_RANK) -> Any:
    """Receive what ``src_rank`` sent with ``broadcast`` (point-to-point ``send`` is not
    provided by the stand-in)."""
    require_init("smp.recv_from()")
    if rank_type not in (RankType.WORLD_RANK, RankType.DP_RANK, RankType.RDP_RANK):
        raise ValueError(
            f"recv_from(rank_type={rank_type}) names a model-parallel rank; the stand-in has no "
            "model-parallel peers to receive from"
        )
    box: list[Any] = [None]
    dist.broadcast_object_list(box, src=src_rank)
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
    """torch.save; with ``partial=True`` each model-parallel rank writes ``<f>_<mp_rank>``."""
    options: dict[str, Any] = {"pickle_protocol": pickle_protocol}
    if pickle_module is not None:
        options["pickle_module"] = pickle_module
    torch.save(obj, _file_name(f, partial, "smp.save"), **options)


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
