"""The stand-in's ``DistributedModel`` and ``DistributedOptimizer``: torch DDP underneath, with
gradients averaged over the microbatches of a step and then over the data-parallel group."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from smdist.runtime.smp.state import DP_GROUP, PARTIAL_KEY, note_once, require_init, state


class DistributedModel(nn.Module):
    """``smp.DistributedModel``: the whole model on this rank, gradients averaged over the
    data-parallel group (``smp.get_dp_group()``), as SMP averages the parameters it does not
    split.

    Call it and its ``backward`` only inside an ``@smp.step`` function, as with the real
    library. Its ``state_dict()`` has the wrapped module's keys, so a saved model loads into
    the plain module.
    """

    def __init__(
        self,
        module: nn.Module,
        trace_device: str = "gpu",
        trace_execution_times: bool = False,
        overlapping_allreduce: bool = True,
        backward_passes_per_step: int = 1,
        average_grads_across_microbatches: bool = True,
        bucket_cap_mb: int = 25,
        trace_memory_usage: bool = False,
        broadcast_buffers: bool = True,
        gradient_as_bucket_view: bool = False,
    ) -> None:
        require_init("smp.DistributedModel")
        if state.model is not None:
            raise RuntimeError("only one model per job can be wrapped with smp.DistributedModel")
        if trace_device not in ("gpu", "cpu"):
            raise ValueError(f"trace_device={trace_device!r} must be 'gpu' or 'cpu'")
        if backward_passes_per_step < 1:
            raise ValueError(f"backward_passes_per_step={backward_passes_per_step} must be >= 1")
        super().__init__()
        if torch.cuda.is_available():
            module = module.to(torch.device("cuda", torch.cuda.current_device()))
        self.module = module
        self.backward_passes_per_step = backward_passes_per_step
        self.average_grads_across_microbatches = average_grads_across_microbatches
        self.partitioned = False
        self._post_partition_hooks: dict[int, Callable[[DistributedModel, Any], None]] = {}
        # DDP starts each data-parallel group from its own first rank; rank 0's weights go to
        # every rank first, so all replicas start alike.
        _broadcast_from_rank_zero(module)
        # Kept outside the module registry so parameters are not listed twice.
        options: dict[str, Any] = {} if broadcast_buffers else {"broadcast_buffers": False}
        ddp = DistributedDataParallel(
            module,
            device_ids=[torch.cuda.current_device()] if torch.cuda.is_available() else None,
            process_group=state.process_groups[DP_GROUP],
            bucket_cap_mb=bucket_cap_mb,
            gradient_as_bucket_view=gradient_as_bucket_view,
            **options,
        )
        object.__setattr__(self, "_ddp", ddp)
        state.model = self

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if not state.in_step:
            raise RuntimeError(
                "smp.DistributedModel can be called only inside an @smp.step function"
            )
        return self._ddp(*args, **kwargs)

    def backward(self, tensors: Any, grad_tensors: Any = None) -> None:
        """Replaces ``loss.backward()``; averages over microbatches unless configured not to."""
        if not state.in_step:
            raise RuntimeError("model.backward() can be called only inside an @smp.step function")
        scale = 1.0
        if self.average_grads_across_microbatches:
            scale = 1.0 / require_init("model.backward").microbatches
        if grad_tensors is None:
            tensors = _scaled(tensors, scale)
        else:
            grad_tensors = _scaled(grad_tensors, scale)
        torch.autograd.backward(tensors, grad_tensors)

    def _no_sync_unless(self, sync: bool) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext() if sync else self._ddp.no_sync()

    def register_post_partition_hook(self, hook: Callable) -> _RemovableHandle:
        """Runs once, at the first ``@smp.step`` call (where SMP partitions the model)."""
        return _RemovableHandle(self._post_partition_hooks, hook)

    def _partition_once(self, arguments: tuple) -> None:
        if not self.partitioned:
            self.partitioned = True
            for hook in list(self._post_partition_hooks.values()):
                hook(self, arguments)

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.module.state_dict(*args, **kwargs)

    def local_state_dict(self) -> dict[str, Any]:
        return {**self.module.state_dict(), PARTIAL_KEY: True}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> Any:
        cleaned = {key: value for key, value in state_dict.items() if key != PARTIAL_KEY}
        return self.module.load_state_dict(cleaned, strict=strict)

    def local_parameters(self) -> Iterator[nn.Parameter]:
        return self.module.parameters()

    def local_named_parameters(self) -> Iterator[tuple[str, nn.Parameter]]:
        return self.module.named_parameters()

    def local_buffers(self) -> Iterator[torch.Tensor]:
        return self.module.buffers()

    def local_named_buffers(self) -> Iterator[tuple[str, torch.Tensor]]:
        return self.module.named_buffers()

    def local_modules(self) -> Iterator[nn.Module]:
        return self.module.modules()

    def local_named_modules(self) -> Iterator[tuple[str, nn.Module]]:
        return self.module.named_modules()

    def join(self, *args: Any, **kwargs: Any) -> Any:
        return self._ddp.join(*args, **kwargs)


class _RemovableHandle:
    _next_id = 0

    def __init__(self, hooks: dict, hook: Callable) -> None:
        self._hooks, self.id = hooks, _RemovableHandle._next_id
        _RemovableHandle._next_id += 1
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


def _broadcast_from_rank_zero(module: nn.Module) -> None:
    if dist.get_world_size() > 1:
        with torch.no_grad():
            for tensor in [*module.parameters(), *module.buffers()]:
                dist.broadcast(tensor.data, src=0)


def _scaled(values: Any, scale: float) -> Any:
    if scale == 1.0 or values is None:
        return values
    if isinstance(values, (list, tuple)):
        return type(values)(_scaled(value, scale) for value in values)
    return values * scale


def DistributedOptimizer(  # noqa: N802 - the library's name for what is a wrapper in use
    optimizer: torch.optim.Optimizer,
    static_loss_scale: float | None = 1.0,
    dynamic_loss_scale: bool = False,
    **dynamic_loss_args: Any,
) -> torch.optim.Optimizer:
    """``smp.DistributedOptimizer``: the same optimizer, with SMP's state-dict methods.

    Like the real wrapper it returns an optimizer whose ``load_state_dict`` accepts partial
    state dicts and which gains ``local_state_dict()``; it stays a ``torch.optim.Optimizer``,
    so learning-rate schedulers accept it. The fp16 loss-scaling arguments are accepted; fp16
    training with SMP's loss scaler is not reproduced.
    """
    require_init("smp.DistributedOptimizer")
    if dynamic_loss_scale or static_loss_scale not in (1.0, None) or dynamic_loss_args:
        note_once("smp: fp16 loss-scaling arguments of DistributedOptimizer have no effect here")
    original_load = optimizer.load_state_dict

    def load_state_dict(state_dict: dict[str, Any]) -> None:
        original_load({key: value for key, value in state_dict.items() if key != PARTIAL_KEY})

    def local_state_dict() -> dict[str, Any]:
        return {**optimizer.state_dict(), PARTIAL_KEY: True}

    optimizer.load_state_dict = load_state_dict  # type: ignore[method-assign]
    optimizer.local_state_dict = local_state_dict  # type: ignore[attr-defined]
    state.optimizer = optimizer
    return optimizer
