"""SageMaker Model Parallel v2 (``torch.sagemaker``), real or stand-in, and FSDP sharding.

SMP v2 is PyTorch FSDP plus SageMaker extras. A script calls ``tsm.init()`` (which reads the
``smdistributed.modelparallel`` parameters, delivered as ``SM_HP_MP_PARAMETERS``), optionally
``tsm.transform(model)`` (which swaps supported Hugging Face transformers for SMP's
tensor-parallel implementations), and shards the model with FSDP; ``hybrid_shard_degree``
decides how many GPUs share one copy of the weights.

``import_tsm()`` returns the real ``torch.sagemaker`` inside SMP v2 containers and a stand-in
elsewhere. The stand-in reproduces:

- ``init(config=None)`` with the configuration checked as documented (``hybrid_shard_degree``
  between 0 and the world size, the parallel degrees between 1 and the world size), joining the
  default process group (NCCL on GPUs, gloo on CPUs);
- ``is_initialized()`` and ``state``: the properties AWS documents (``hybrid_shard_degree``,
  ``rank``, ``world_size``, ``tensor_parallel_degree``, ``tp_size``, ``tp_rank``,
  ``tp_process_group``, ``rep_rank_process_group``) and those AWS's SMP v2 example scripts read
  (``context_parallel_degree``, ``cp_size``, ``cp_rank``, ``expert_parallel_degree``,
  ``ep_size``, ``ep_rank``, ``world_process_group``, ``sm_activation_offloading``,
  ``ranker.get_rep_rank(rank)``, ``ranker.get_rep_groups()``). With ``hybrid_shard_degree``
  0 or 1 SMP falls back to native PyTorch and the two process groups are None; from 2 up
  ``rep_rank_process_group`` is this rank's shard group (the ranks holding one copy of the
  weights) and ``tp_process_group`` holds the rank alone (tensor parallel degree 1);
- FSDP sharding as SMP sets it: with ``hybrid_shard_degree`` d >= 2, an FSDP
  (``FullyShardedDataParallel``) built without a process group or device mesh shards over
  groups of d consecutive ranks and replicates across them (``HYBRID_SHARD``, or the
  ``_HYBRID_SHARD_ZERO2`` the script asked for). Where no accelerator exists (a local run on
  CPUs), FSDP is also given ``device_id=cpu``, which it needs to run on gloo;
- ``transform(model, device, dtype, load_state_dict_from_rank0=...)``: moves/casts the model and
  copies rank 0's weights to every rank when asked; the model itself is returned unchanged.

It does not reproduce tensor, context or expert parallelism: ``tensor_parallel_degree``,
``context_parallel_degree`` and ``expert_parallel_degree`` must be 1 locally (init refuses
anything else and says so), and ``transform`` converts no model. Nor does it reproduce SMP's
activation offloading, delayed parameter initialisation, FP8, or its checkpoint APIs
(``torch.sagemaker.distributed.checkpoint``): use ``torch.distributed.checkpoint``.

``shard_model()`` is smdist's own: it applies FSDP2 ``fully_shard`` with the device mesh that
``hybrid_shard_degree`` describes (0: shard over all ranks; 1: replicate; k: shard within
groups of k ranks, replicate across groups). It is plain PyTorch, so it behaves the same with
the real library and with the stand-in; on CPUs it runs over gloo.

This module is the public one; it holds the stand-in and re-exports the parts it is built
from: the parameters (``smp_v2_config``), the shard layout (``smp_v2_layout``) and FSDP as
SMP v2 sets it (``smp_v2_fsdp``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smdist.runtime.smp_v2_config import (
    KNOWN_KEYS,
    SMP_V2_PARAMETERS,
    SMPv2Config,
    SMPv2ConfigError,
    parse_v2_config,
)
from smdist.runtime.smp_v2_fsdp import broadcast_module_state, install_fsdp_defaults, shard_model
from smdist.runtime.smp_v2_layout import HybridShardLayout, mesh_shape
from smdist.runtime.torch_training import ensure_rendezvous_env, say

__all__ = [
    "KNOWN_KEYS",
    "REAL_MODULE",
    "SMP_V2_PARAMETERS",
    "HybridShardLayout",
    "SMPv2Config",
    "SMPv2ConfigError",
    "StandInState",
    "TorchSageMakerStandIn",
    "broadcast_module_state",
    "import_tsm",
    "install_fsdp_defaults",
    "mesh_shape",
    "parse_v2_config",
    "shard_model",
    "stand_in",
    "state_for",
]

REAL_MODULE = "torch.sagemaker"


@dataclass
class StandInState:
    """``torch.sagemaker.state`` as the stand-in fills it."""

    hybrid_shard_degree: int = 0
    rank: int = 0
    world_size: int = 1
    tensor_parallel_degree: int = 1
    tp_size: int = 1
    tp_rank: int = 0
    context_parallel_degree: int = 1
    cp_size: int = 1
    cp_rank: int = 0
    expert_parallel_degree: int = 1
    ep_size: int = 1
    ep_rank: int = 0
    sm_activation_offloading: bool = True
    ranker: HybridShardLayout | None = None
    tp_process_group: Any = None  # None: native PyTorch fallback, as documented
    rep_rank_process_group: Any = None
    world_process_group: Any = None
    config: SMPv2Config | None = None


def state_for(config: SMPv2Config, rank: int, world_size: int) -> StandInState:
    """The state's degrees and ranks for ``rank`` of ``world_size`` (process groups unset).

    Locally the tensor, context and expert parallel degrees are 1, so every rank is rank 0 of
    those dimensions.
    """
    return StandInState(
        hybrid_shard_degree=config.hybrid_shard_degree,
        rank=rank,
        world_size=world_size,
        tensor_parallel_degree=config.tensor_parallel_degree,
        tp_size=config.tensor_parallel_degree,
        context_parallel_degree=config.context_parallel_degree,
        cp_size=config.context_parallel_degree,
        expert_parallel_degree=config.expert_parallel_degree,
        ep_size=config.expert_parallel_degree,
        sm_activation_offloading=config.sm_activation_offloading,
        ranker=HybridShardLayout(config.hybrid_shard_degree, world_size),
        config=config,
    )


def _smp_process_groups(state: StandInState) -> None:
    """The groups SMP creates when it does not fall back to native PyTorch (collective: every
    rank creates every group)."""
    import torch.distributed as dist

    state.world_process_group = dist.group.WORLD
    layout = state.ranker
    if layout is None or not layout.smp_active:
        return
    state.rep_rank_process_group, _ = dist.new_subgroups_by_enumeration(layout.shard_groups())
    singles = [[rank] for rank in range(state.world_size)]
    state.tp_process_group, _ = dist.new_subgroups_by_enumeration(singles)


# What the stand-in's note says it leaves out (the module docstring's list, in one line).
NOT_REPRODUCED = (
    "not reproduced: tensor, context and expert parallelism (their degrees must be 1), "
    "transform()'s model conversion, activation offloading, delayed parameter "
    "initialisation, FP8, torch.sagemaker.distributed.checkpoint, and SMP's speed"
)


class TorchSageMakerStandIn:
    """The part of ``torch.sagemaker`` an FSDP training script calls."""

    def __init__(self) -> None:
        self.state = StandInState()

    def init(self, config: Mapping[str, Any] | str | None = None) -> None:
        import torch
        import torch.distributed as dist

        parsed = parse_v2_config(config)
        parsed.check_runs_locally()
        if not dist.is_initialized():
            ensure_rendezvous_env()
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        rank, world_size = dist.get_rank(), dist.get_world_size()
        parsed.check_world_size(world_size)
        state = state_for(parsed, rank, world_size)
        _smp_process_groups(state)
        self.state = state
        install_fsdp_defaults(state.ranker)
        if parsed.random_seed is not None:
            torch.manual_seed(parsed.random_seed)
        if rank == 0:
            layout = state.ranker
            say(
                "torch.sagemaker: SageMaker's SMP v2 library is not installed here; a local "
                f"stand-in runs plain FSDP over {world_size} ranks "
                f"(hybrid_shard_degree={parsed.hybrid_shard_degree}: shard groups of "
                f"{layout.shard_size} ranks, {layout.replicas} replicas); {NOT_REPRODUCED}"
            )
            if parsed.unknown:
                unknown = ", ".join(parsed.unknown)
                say(f"torch.sagemaker: unknown SMP v2 parameters ignored: {unknown}")

    def is_initialized(self) -> bool:
        return self.state.config is not None

    def transform(
        self,
        model: Any,
        device: Any = None,
        dtype: Any = None,
        config: Mapping[str, Any] | None = None,
        load_state_dict_from_rank0: bool = False,
        cp_comm_type: str = "p2p",
    ) -> Any:
        """Returns ``model`` (moved, cast, and synced from rank 0 if asked); no conversion."""
        if not self.is_initialized():
            raise RuntimeError("torch.sagemaker.transform needs torch.sagemaker.init() first")
        if cp_comm_type not in ("p2p", "all_gather"):
            raise SMPv2ConfigError(f"cp_comm_type={cp_comm_type!r} must be 'p2p' or 'all_gather'")
        if device is not None:
            model = model.to(device)
        if dtype is not None:
            model = model.to(dtype)
        if load_state_dict_from_rank0:
            broadcast_module_state(model)
        return model


_stand_in: TorchSageMakerStandIn | None = None


def stand_in() -> TorchSageMakerStandIn:
    """The stand-in (one per process): also what ``torch.sagemaker`` answers on emulated hosts."""
    global _stand_in
    if _stand_in is None:
        _stand_in = TorchSageMakerStandIn()
    return _stand_in


def import_tsm() -> Any:
    """The real ``torch.sagemaker`` when installed, else the (single) stand-in."""
    try:
        module = importlib.import_module(REAL_MODULE)
    except ImportError:
        return stand_in()
    # On the local backend's hosts the name answers with the stand-in itself (SMDIST_STAND_IN).
    return stand_in() if getattr(module, "SMDIST_STAND_IN", False) else module
