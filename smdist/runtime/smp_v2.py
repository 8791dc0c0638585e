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
"""

from __future__ import annotations

import functools
import importlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smdist.runtime.smp.config import MP_PARAMETERS_ENV
from smdist.runtime.torch_training import ConfigurationError, ensure_rendezvous_env, say

REAL_MODULE = "torch.sagemaker"
# SMP v2's parameters, in the order SDK v3's ``SMP`` config declares them (its mp_parameters
# JSON follows it).
SMP_V2_PARAMETERS = (
    "hybrid_shard_degree",
    "sm_activation_offloading",
    "activation_loading_horizon",
    "fsdp_cache_flush_warnings",
    "allow_empty_shards",
    "tensor_parallel_degree",
    "context_parallel_degree",
    "expert_parallel_degree",
    "random_seed",
)
KNOWN_KEYS = frozenset(SMP_V2_PARAMETERS)
_LOCAL_ONLY_ONE = ("tensor_parallel_degree", "context_parallel_degree", "expert_parallel_degree")


class SMPv2ConfigError(ConfigurationError):
    """An SMP v2 parameter the library, or the local stand-in, cannot run with."""


@dataclass(frozen=True)
class SMPv2Config:
    hybrid_shard_degree: int = 0
    tensor_parallel_degree: int = 1
    context_parallel_degree: int = 1
    expert_parallel_degree: int = 1
    random_seed: int | None = None
    sm_activation_offloading: bool = True  # the documented default
    unknown: tuple[str, ...] = ()

    def check_world_size(self, world_size: int) -> None:
        """The documented ranges, plus the mesh rule: shard groups must tile the world."""
        if not 0 <= self.hybrid_shard_degree <= world_size:
            raise SMPv2ConfigError(
                f"hybrid_shard_degree={self.hybrid_shard_degree} must be between 0 and the "
                f"world size {world_size}"
            )
        if self.hybrid_shard_degree > 1 and world_size % self.hybrid_shard_degree:
            raise SMPv2ConfigError(
                f"hybrid_shard_degree={self.hybrid_shard_degree} does not divide the world size "
                f"{world_size}; use a divisor of {world_size}"
            )
        for key in _LOCAL_ONLY_ONE:
            value = getattr(self, key)
            if not 1 <= value <= world_size:
                raise SMPv2ConfigError(
                    f"{key}={value} must be between 1 and the world size {world_size}"
                )

    def check_runs_locally(self) -> None:
        for key in _LOCAL_ONLY_ONE:
            if getattr(self, key) != 1:
                raise SMPv2ConfigError(
                    f"{key}={getattr(self, key)} needs SageMaker's SMP v2 library (in its "
                    "PyTorch containers); the local stand-in runs FSDP only, so set it to 1 "
                    "for local runs"
                )


def _as_int(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SMPv2ConfigError(f"{key}={value!r} must be an integer >= {minimum}")
    return value


def _as_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SMPv2ConfigError(f"{key}={value!r} must be true or false")
    return value


def parse_v2_config(
    config: Mapping[str, Any] | str | None = None, environ: Mapping[str, str] = os.environ
) -> SMPv2Config:
    """The config from ``config`` (a dict, JSON text or a JSON file's path), else
    ``SM_HP_MP_PARAMETERS``, else the defaults."""
    source = "the config argument"
    if config is None:
        config, source = environ.get(MP_PARAMETERS_ENV) or "{}", MP_PARAMETERS_ENV
    if isinstance(config, str):
        text = config
        if not text.lstrip().startswith("{") and Path(text).is_file():
            source, text = text, Path(text).read_text(encoding="utf-8")
        try:
            config = json.loads(text)
        except json.JSONDecodeError as error:
            raise SMPv2ConfigError(
                f"{source} is not valid JSON ({error.msg} at character {error.pos})"
            ) from None
    if not isinstance(config, Mapping):
        raise SMPv2ConfigError(
            f'{source} must be a JSON object such as {{"hybrid_shard_degree": 2}}'
        )
    seed = config.get("random_seed")
    return SMPv2Config(
        hybrid_shard_degree=_as_int("hybrid_shard_degree", config.get("hybrid_shard_degree", 0), 0),
        tensor_parallel_degree=_as_int(
            "tensor_parallel_degree", config.get("tensor_parallel_degree", 1), 1
        ),
        context_parallel_degree=_as_int(
            "context_parallel_degree", config.get("context_parallel_degree", 1), 1
        ),
        expert_parallel_degree=_as_int(
            "expert_parallel_degree", config.get("expert_parallel_degree", 1), 1
        ),
        random_seed=None if seed is None else _as_int("random_seed", seed, 0),
        sm_activation_offloading=_as_bool(
            "sm_activation_offloading", config.get("sm_activation_offloading", True)
        ),
        unknown=tuple(sorted(key for key in config if key not in KNOWN_KEYS)),
    )


def mesh_shape(hybrid_shard_degree: int, world_size: int) -> tuple[int, ...]:
    """The FSDP device mesh: (shard,) or (replicate, shard)."""
    if hybrid_shard_degree in (0, world_size):
        return (world_size,)
    return (world_size // hybrid_shard_degree, hybrid_shard_degree)


@dataclass(frozen=True)
class HybridShardLayout:
    """Which ranks hold one copy of the weights between them (a shard group: ``shard_size``
    consecutive ranks) and which hold the same shard (a replication group), for
    ``hybrid_shard_degree`` with tensor, context and expert parallel degrees 1.

    0 is native FSDP's FULL_SHARD (one shard group of every rank); 1 is NO_SHARD (every rank a
    replica). It is the stand-in's ``state.ranker``, with the methods AWS's SMP v2 example
    scripts call.
    """

    hybrid_shard_degree: int
    world_size: int

    @property
    def smp_active(self) -> bool:
        """False where SMP falls back to native PyTorch FSDP (degree 0 or 1)."""
        return self.hybrid_shard_degree >= 2

    @property
    def shard_size(self) -> int:
        return self.hybrid_shard_degree or self.world_size

    @property
    def replicas(self) -> int:
        return self.world_size // self.shard_size

    def shard_groups(self) -> list[list[int]]:
        size = self.shard_size
        return [list(range(start, start + size)) for start in range(0, self.world_size, size)]

    def get_rep_groups(self) -> list[list[int]]:
        """The replication groups: the ranks holding the same shard, one per shard rank."""
        return [
            list(range(shard, self.world_size, self.shard_size)) for shard in range(self.shard_size)
        ]

    def get_rep_rank(self, rank: int) -> int:
        """Which copy of the weights ``rank`` helps hold (its replication rank)."""
        return rank // self.shard_size

    def get_shard_rank(self, rank: int) -> int:
        return rank % self.shard_size


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
                f"{layout.shard_size} ranks, {layout.replicas} replicas)"
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


# --- FSDP as SMP v2 configures it -----------------------------------------------------------

_fsdp_layout: HybridShardLayout | None = None  # what the FSDP wrapper applies; set by init()
_hybrid_meshes: dict[HybridShardLayout, Any] = {}


def install_fsdp_defaults(layout: HybridShardLayout | None) -> None:
    """Make ``FullyShardedDataParallel`` shard as ``layout`` says when the script names no
    group (SMP v2 patches FSDP the same way), and run on CPUs where there is no accelerator.
    Installed once; a later ``init`` only changes the layout it applies."""
    import inspect

    from torch.distributed.fsdp import FullyShardedDataParallel

    global _fsdp_layout
    _fsdp_layout = layout
    _hybrid_meshes.clear()  # made over the process group of an earlier init, maybe gone
    original = FullyShardedDataParallel.__init__
    if getattr(original, "_smdist_stand_in", False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        _fsdp_arguments(bound.arguments)
        original(*bound.args, **bound.kwargs)

    __init__._smdist_stand_in = True  # type: ignore[attr-defined]
    FullyShardedDataParallel.__init__ = __init__  # type: ignore[method-assign]


def _fsdp_arguments(arguments: dict[str, Any]) -> None:
    """Fill in what the script left out: the hybrid mesh, the strategy, the CPU device."""
    import torch
    from torch.distributed.fsdp import ShardingStrategy

    layout = _fsdp_layout
    no_group = arguments.get("process_group") is None and arguments.get("device_mesh") is None
    if layout is not None and layout.smp_active and no_group:
        arguments["device_mesh"] = _hybrid_mesh(layout)
        if arguments.get("sharding_strategy") is not ShardingStrategy._HYBRID_SHARD_ZERO2:
            arguments["sharding_strategy"] = ShardingStrategy.HYBRID_SHARD
    if arguments.get("device_id") is None and not _accelerator_available(torch):
        arguments["device_id"] = torch.device("cpu")


def _hybrid_mesh(layout: HybridShardLayout) -> Any:
    """The (replicate, shard) mesh whose rows are the shard groups; made once per layout."""
    if layout not in _hybrid_meshes:
        import torch
        from torch.distributed.device_mesh import init_device_mesh

        device_type = "cuda" if torch.cuda.is_available() else "cpu"
        shape = (layout.replicas, layout.shard_size)
        _hybrid_meshes[layout] = init_device_mesh(
            device_type, shape, mesh_dim_names=("replicate", "shard")
        )
    return _hybrid_meshes[layout]


def _accelerator_available(torch: Any) -> bool:
    accelerator = getattr(torch, "accelerator", None)  # torch >= 2.6
    return accelerator.is_available() if accelerator is not None else torch.cuda.is_available()


def broadcast_module_state(module: Any) -> None:
    """Copy rank 0's parameters and buffers to every rank (FSDP's ``sync_module_states``)."""
    import torch.distributed as dist

    if dist.is_initialized() and dist.get_world_size() > 1:
        for tensor in [*module.parameters(), *module.buffers()]:
            dist.broadcast(tensor.data, src=0)


def shard_model(
    model: Any,
    hybrid_shard_degree: int,
    blocks: Iterable[Any] = (),
    mp_policy: Any = None,
) -> Any:
    """Shard ``model`` with FSDP2 as ``hybrid_shard_degree`` says, ``blocks`` first.

    Rank 0's weights are copied to every rank first, so replicas start equal however the
    ranks initialised their modules.
    """
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    world_size = dist.get_world_size()
    shape = mesh_shape(hybrid_shard_degree, world_size)
    names = ("shard",) if len(shape) == 1 else ("replicate", "shard")
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    mesh = init_device_mesh(device_type, shape, mesh_dim_names=names)
    broadcast_module_state(model)
    options = {"mesh": mesh, "mp_policy": mp_policy or MixedPrecisionPolicy()}
    for block in blocks:
        fully_shard(block, **options)
    fully_shard(model, **options)
    return model
