"""``smp.save`` and ``smp.load``: torch.save and torch.load with the library's file names
(``<f>_<mp_rank>`` for partial files) and its string-only file arguments."""

from __future__ import annotations

from typing import Any

import torch

from smdist.runtime.smp.process_groups import mp_rank
from smdist.runtime.smp.state import state


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
    """torch.save; with ``partial=True`` each model-parallel rank writes ``<f>_<mp_rank>``, and
    a full file (``partial=False``) is written by rank 0 alone, as the library does."""
    options: dict[str, Any] = {"pickle_protocol": pickle_protocol}
    if pickle_module is not None:
        options["pickle_module"] = pickle_module
    name = _file_name(f, partial, "smp.save")
    if partial or state.rank == 0:
        torch.save(obj, name, **options)


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
