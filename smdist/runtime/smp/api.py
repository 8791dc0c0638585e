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

This module holds ``init`` and the model-creation contexts and gathers the API's names from
the modules that implement them: ``process_groups`` (ranks, groups, process groups),
``communication`` (barriers and object messages), ``saving`` (``save`` / ``load``), ``model``,
``step`` and ``microbatches``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist

from smdist.runtime.smp.communication import (
    allgather,
    barrier,
    broadcast,
    dp_barrier,
    mp_barrier,
    pp_barrier,
    rdp_barrier,
    recv_from,
    send,
    tp_barrier,
)
from smdist.runtime.smp.config import parse_mp_parameters
from smdist.runtime.smp.microbatches import StepOutput
from smdist.runtime.smp.model import DistributedModel, DistributedOptimizer
from smdist.runtime.smp.process_groups import (
    create_process_groups,
    dp_rank,
    dp_size,
    get_dp_group,
    get_dp_process_group,
    get_mp_group,
    get_mp_process_group,
    get_pp_group,
    get_pp_process_group,
    get_rdp_group,
    get_rdp_process_group,
    get_tp_group,
    get_tp_process_group,
    get_world_process_group,
    is_initialized,
    is_tracing,
    local_position,
    local_rank,
    local_size,
    mp_rank,
    mp_size,
    pp_rank,
    pp_size,
    rank,
    rdp_rank,
    rdp_size,
    size,
    tp_rank,
    tp_size,
)
from smdist.runtime.smp.saving import load, save
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
    state.process_groups = create_process_groups(topology)
    state.topology, state.cfg = topology, cfg
    state.local_rank, state.local_size = local_position()
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
