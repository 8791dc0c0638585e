"""The stand-in's ``@smp.step``: arguments split into microbatches, the body run once per
microbatch, outputs returned as ``StepOutput``."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from smdist.runtime.smp.microbatches import (
    merge_outputs,
    run_microbatches,
    split_arguments,
)
from smdist.runtime.smp.state import require_init, state


def step(
    function: Callable | None = None,
    *,
    non_split_inputs: Sequence[str] | None = None,
    input_split_axes: dict[str, int] | None = None,
    detach_outputs: bool = True,
) -> Any:
    """``@smp.step`` / ``@smp.step(...)``: run the body once per microbatch.

    Tensors the body returns come back as ``StepOutput`` (``reduce_mean()``, ``concat()``, ...).
    Gradients are summed locally over the microbatches and averaged over the data-parallel
    group once, after the last microbatch of the step (every ``backward_passes_per_step``
    steps).
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
        cfg = require_init("an @smp.step function")
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
