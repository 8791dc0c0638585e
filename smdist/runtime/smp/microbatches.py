"""How ``smp.step`` cuts its arguments into microbatches and gathers what each returns.

SMP v1 runs the body of an ``@smp.step`` function once per microbatch. Every tensor argument is
split along its batch axis (axis 0 unless ``input_split_axes`` says otherwise) into
``microbatches`` equal parts; lists, tuples, dicts and sets are split element by element;
objects that implement ``smp_slice(num_mb, mb, axis)`` slice themselves; anything else is passed
unchanged to every microbatch, as are the arguments named in ``non_split_inputs``. The tensors a
step returns come back as ``StepOutput`` objects holding one tensor per microbatch.

torch is imported only when a tensor is met, so the splitting rules are usable (and testable)
without it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from smdist.runtime.torch_training import ConfigurationError


class MicrobatchSplitError(ConfigurationError):
    """An argument cannot be split into the configured number of microbatches."""


def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _split_tensor(value: Any, parts: int, axis: int, where: str) -> list[Any]:
    if value.dim() == 0:
        raise MicrobatchSplitError(
            f"{where} is a 0-dimensional tensor and has no batch axis to split; name it in "
            "smp.step's non_split_inputs"
        )
    if not -value.dim() <= axis < value.dim():
        raise MicrobatchSplitError(
            f"{where} has {value.dim()} dimensions, so it has no axis {axis} to split along; "
            "fix its entry in smp.step's input_split_axes"
        )
    size = value.shape[axis]
    if size % parts:
        raise MicrobatchSplitError(
            f"{where} has size {size} along axis {axis}, which is not divisible by "
            f"microbatches={parts}; use a batch size that is a multiple of {parts} (and "
            "drop_last=True in the DataLoader)"
        )
    length = size // parts
    return [value.narrow(axis, index * length, length) for index in range(parts)]


def split_value(value: Any, parts: int, axis: int = 0, where: str = "argument") -> list[Any]:
    """``value`` as ``parts`` microbatch values, following SMP's splitting rules."""
    if _is_tensor(value):
        return _split_tensor(value, parts, axis, where)
    if hasattr(value, "smp_slice"):
        return [value.smp_slice(parts, index, axis) for index in range(parts)]
    if isinstance(value, Mapping):
        split = {
            key: split_value(item, parts, axis, f"{where}[{key!r}]") for key, item in value.items()
        }
        return [type(value)({key: items[i] for key, items in split.items()}) for i in range(parts)]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        split_items = [
            split_value(item, parts, axis, f"{where}[{position}]")
            for position, item in enumerate(items)
        ]
        rebuilt = [[column[i] for column in split_items] for i in range(parts)]
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
            return [type(value)(*row) for row in rebuilt]
        return [type(value)(row) for row in rebuilt]
    return [value] * parts


def split_arguments(
    arguments: Mapping[str, Any],
    parts: int,
    non_split_inputs: Sequence[str] = (),
    input_split_axes: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Bound arguments (name -> value) as one dict per microbatch."""
    if parts < 1:
        raise MicrobatchSplitError(f"microbatches={parts} must be at least 1")
    axes = dict(input_split_axes or {})
    unknown = (set(non_split_inputs) | set(axes)) - set(arguments)
    if unknown:
        raise MicrobatchSplitError(
            f"smp.step names {sorted(unknown)} in non_split_inputs/input_split_axes, but the "
            f"call has no such arguments (it has {sorted(arguments)})"
        )
    per_microbatch: list[dict[str, Any]] = [{} for _ in range(parts)]
    for name, value in arguments.items():
        if name in non_split_inputs:
            pieces = [value] * parts
        else:
            pieces = split_value(value, parts, axes.get(name, 0), f"argument {name!r}")
        for index, piece in enumerate(pieces):
            per_microbatch[index][name] = piece
    return per_microbatch


class StepOutput:
    """One returned tensor, as computed by each microbatch, with SMP's ways to combine them."""

    def __init__(self, outputs: list[Any]) -> None:
        self.outputs = outputs

    def reduce_mean(self) -> Any:
        """The mean over microbatches (the batch loss when each microbatch returns its loss)."""
        import torch

        return torch.stack(self.outputs).mean(dim=0)

    def reduce_sum(self) -> Any:
        import torch

        return torch.stack(self.outputs).sum(dim=0)

    def concat(self) -> Any:
        """The microbatch tensors joined along the batch axis (e.g. the batch's predictions)."""
        import torch

        return torch.cat(self.outputs, dim=0)

    def stack(self) -> Any:
        import torch

        return torch.stack(self.outputs)

    def __len__(self) -> int:
        return len(self.outputs)

    def __repr__(self) -> str:
        return f"StepOutput({len(self.outputs)} microbatches)"


def merge_outputs(outputs: list[Any], detach: bool = True) -> Any:
    """What each microbatch returned, merged: tensors become StepOutput, containers recurse.

    Values that are not tensors are taken from the last microbatch.
    """
    first = outputs[0]
    if _is_tensor(first):
        return StepOutput([item.detach() if detach else item for item in outputs])
    if isinstance(first, Mapping):
        return type(first)(
            {key: merge_outputs([item[key] for item in outputs], detach) for key in first}
        )
    if isinstance(first, (list, tuple)):
        merged = [
            merge_outputs([item[position] for item in outputs], detach)
            for position in range(len(first))
        ]
        if isinstance(first, tuple) and hasattr(first, "_fields"):
            return type(first)(*merged)
        return type(first)(merged)
    return outputs[-1]


def run_microbatches(
    function: Callable[..., Any],
    per_microbatch: list[tuple[tuple, dict]],
    context_for: Callable[[int], Any],
) -> list[Any]:
    """Call ``function`` once per microbatch inside ``context_for(index)``."""
    results = []
    for index, (args, kwargs) in enumerate(per_microbatch):
        with context_for(index):
            results.append(function(*args, **kwargs))
    return results
