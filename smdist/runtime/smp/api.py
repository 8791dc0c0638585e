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
import enum
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from smdist.runtime.smp.config import SMPConfig, parse_mp_parameters
from smdist.runtime.smp.microbatches import (
    StepOutput,
    merge_outputs,
    run_microbatches,
    split_arguments,
)
from smdist.runtime.torch_training import ensure_rendezvous_env, release_before_exit, say

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

PARTIAL_KEY = "_smp_is_partial"


class CommGroup(enum.Enum):
    WORLD = 0
    MP_GROUP = 1
    DP_GROUP = 2
    TP_GROUP = 3
    PP_GROUP = 4
    RDP_GROUP = 5


WORLD = CommGroup.WORLD
MP_GROUP = CommGroup.MP_GROUP
DP_GROUP = CommGroup.DP_GROUP
TP_GROUP = CommGroup.TP_GROUP
PP_GROUP = CommGroup.PP_GROUP
RDP_GROUP = CommGroup.RDP_GROUP
# Groups that span all ranks here; the others hold only the calling rank.
_ALL_RANK_GROUPS = (CommGroup.WORLD, CommGroup.DP_GROUP, CommGroup.RDP_GROUP)


class RankType(enum.Enum):
    WORLD_RANK = 0
    MP_RANK = 1
    DP_RANK = 2
    TP_RANK = 3
    PP_RANK = 4
    RDP_RANK = 5


@dataclass
class _State:
    """What ``smp.state`` holds after ``smp.init()``."""

    cfg: SMPConfig | None = None
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    model: DistributedModel | None = None
    optimizer: torch.optim.Optimizer | None = None
    microbatch: int = 0
    in_step: bool = False
    steps_run: int = 0
    announced: set[str] = field(default_factory=set)

    @property
    def initialized(self) -> bool:
        return self.cfg is not None


state = _State()


def _require_init(what: str) -> SMPConfig:
    if state.cfg is None:
        raise RuntimeError(f"{what} needs smp.init() to be called first")
    return state.cfg


def _note_once(message: str) -> None:
    if message not in state.announced and state.rank == 0:
        state.announced.add(message)
        say(message)


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
    _note_once(
        "smp: SageMaker's model parallel library is not installed here; a local stand-in runs "
        f"every one of the {state.size} ranks as a full data-parallel replica "
        f"(microbatches={cfg.microbatches})"
    )
    if cfg.model_parallel_degree > 1 or cfg.sharded_data_parallel_degree > 1:
        _note_once(
            f"smp: pipeline_parallel_degree={cfg.pipeline_parallel_degree}, "
            f"tensor_parallel_degree={cfg.tensor_parallel_degree} and "
            f"sharded_data_parallel_degree={cfg.sharded_data_parallel_degree} take effect only "
            "on SageMaker; here mp_size()=1 and dp_size()=size()"
        )
    if cfg.unknown:
        _note_once(f"smp: unknown SMP parameters ignored: {', '.join(cfg.unknown)}")


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
    _require_init("smp.rank()")
    return state.rank


def size() -> int:
    _require_init("smp.size()")
    return state.size


def local_rank() -> int:
    _require_init("smp.local_rank()")
    return state.local_rank


def local_size() -> int:
    _require_init("smp.local_size()")
    return state.local_size


dp_rank = rdp_rank = rank
dp_size = rdp_size = size


def mp_rank() -> int:
    _require_init("smp.mp_rank()")
    return 0


def mp_size() -> int:
    _require_init("smp.mp_size()")
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
    _require_init("smp.get_world_process_group()")
    return dist.group.WORLD


get_dp_process_group = get_rdp_process_group = get_world_process_group


# --- communication ------------------------------------------------------------------------


def _spans_all(group: CommGroup) -> bool:
    _require_init("smp communication")
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
    _require_init("smp.recv_from()")
    if rank_type not in (RankType.WORLD_RANK, RankType.DP_RANK, RankType.RDP_RANK):
        raise ValueError(
            f"recv_from(rank_type={rank_type}) names a model-parallel rank; the stand-in has no "
            "model-parallel peers to receive from"
        )
    box: list[Any] = [None]
    dist.broadcast_object_list(box, src=src_rank)
    return box[0]


# --- model and optimizer ------------------------------------------------------------------


class DistributedModel(nn.Module):
    """``smp.DistributedModel``: the whole model on this rank, gradients averaged over ranks.

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
        _require_init("smp.DistributedModel")
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
        # Kept outside the module registry so parameters are not listed twice.
        options: dict[str, Any] = {} if broadcast_buffers else {"broadcast_buffers": False}
        ddp = DistributedDataParallel(
            module,
            device_ids=[torch.cuda.current_device()] if torch.cuda.is_available() else None,
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
            scale = 1.0 / _require_init("model.backward").microbatches
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
    _require_init("smp.DistributedOptimizer")
    if dynamic_loss_scale or static_loss_scale not in (1.0, None) or dynamic_loss_args:
        _note_once("smp: fp16 loss-scaling arguments of DistributedOptimizer have no effect here")
    original_load = optimizer.load_state_dict

    def load_state_dict(state_dict: dict[str, Any]) -> None:
        original_load({key: value for key, value in state_dict.items() if key != PARTIAL_KEY})

    def local_state_dict() -> dict[str, Any]:
        return {**optimizer.state_dict(), PARTIAL_KEY: True}

    optimizer.load_state_dict = load_state_dict  # type: ignore[method-assign]
    optimizer.local_state_dict = local_state_dict  # type: ignore[attr-defined]
    state.optimizer = optimizer
    return optimizer


# --- the step decorator -------------------------------------------------------------------


def step(
    function: Callable | None = None,
    *,
    non_split_inputs: Sequence[str] | None = None,
    input_split_axes: dict[str, int] | None = None,
    detach_outputs: bool = True,
) -> Any:
    """``@smp.step`` / ``@smp.step(...)``: run the body once per microbatch.

    Tensors the body returns come back as ``StepOutput`` (``reduce_mean()``, ``concat()``, ...).
    Gradients are summed locally over the microbatches and averaged over ranks once, after the
    last microbatch of the step (every ``backward_passes_per_step`` steps).
    """
    if function is None:
        return functools.partial(
            step,
            non_split_inputs=non_split_inputs,
            input_split_axes=input_split_axes,
            detach_outputs=detach_outputs,
        )
    signature = inspect.signature(function)

    @functools.wraps(function)
    def run_step(*args: Any, **kwargs: Any) -> Any:
        cfg = _require_init("an @smp.step function")
        if state.in_step:
            raise RuntimeError("@smp.step functions cannot call one another")
        bound = signature.bind(*args, **kwargs)
        per_microbatch = [
            _rebind(signature, arguments)
            for arguments in split_arguments(
                bound.arguments, cfg.microbatches, non_split_inputs or (), input_split_axes
            )
        ]
        model = state.model
        if model is not None:
            model._partition_once(args)
        syncs = model is None or (state.steps_run + 1) % model.backward_passes_per_step == 0
        last = cfg.microbatches - 1

        def context_for(index: int) -> contextlib.AbstractContextManager:
            state.microbatch = index
            if model is None:
                return contextlib.nullcontext()
            return model._no_sync_unless(syncs and index == last)

        state.in_step = True
        try:
            results = run_microbatches(function, per_microbatch, context_for)
        finally:
            state.in_step = False
        state.steps_run += 1
        return merge_outputs(results, detach_outputs)

    return run_step


def _rebind(signature: inspect.Signature, arguments: dict[str, Any]) -> tuple[tuple, dict]:
    bound = inspect.BoundArguments(signature, arguments)  # type: ignore[arg-type]
    return bound.args, bound.kwargs


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
    cfg = _require_init("smp.partition")
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
