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
- ``is_initialized()`` and ``state`` (``hybrid_shard_degree``, ``rank``, ``world_size``,
  ``tensor_parallel_degree``, ``tp_size``, ``tp_rank``, and the process groups that native
  PyTorch falls back to: ``tp_process_group`` and ``rep_rank_process_group`` are None);
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
        unknown=tuple(sorted(key for key in config if key not in KNOWN_KEYS)),
    )


def mesh_shape(hybrid_shard_degree: int, world_size: int) -> tuple[int, ...]:
    """The FSDP device mesh: (shard,) or (replicate, shard)."""
    if hybrid_shard_degree in (0, world_size):
        return (world_size,)
    return (world_size // hybrid_shard_degree, hybrid_shard_degree)


@dataclass
class StandInState:
    """``torch.sagemaker.state`` as the stand-in fills it."""

    hybrid_shard_degree: int = 0
    rank: int = 0
    world_size: int = 1
    tensor_parallel_degree: int = 1
    tp_size: int = 1
    tp_rank: int = 0
    tp_process_group: Any = None  # None: native PyTorch fallback, as documented
    rep_rank_process_group: Any = None
    config: SMPv2Config | None = None


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
        self.state = StandInState(
            hybrid_shard_degree=parsed.hybrid_shard_degree,
            rank=rank,
            world_size=world_size,
            config=parsed,
        )
        if parsed.random_seed is not None:
            torch.manual_seed(parsed.random_seed)
        if rank == 0:
            say(
                "torch.sagemaker: SageMaker's SMP v2 library is not installed here; a local "
                f"stand-in runs plain FSDP over {world_size} ranks "
                f"(hybrid_shard_degree={parsed.hybrid_shard_degree})"
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
