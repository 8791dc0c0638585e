"""FSDP sharded as SMP v2 sets it: the stand-in's defaults for ``FullyShardedDataParallel``
and smdist's own ``shard_model`` (FSDP2 ``fully_shard`` over the hybrid mesh)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from smdist.runtime.smp_v2_layout import HybridShardLayout, mesh_shape

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
