"""Checkpoint file naming, atomic writes and finding the newest one to resume from.

Framework-neutral: entry points pass a ``save`` callable that writes to a path (torch.save,
model.save_weights, ...). Files are named ``checkpoint-<step>.<suffix>`` with a zero-padded
step so the newest sorts last; a write goes to a temporary name first and is renamed into place,
so a job killed mid-write never leaves a truncated file that a restart would load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

_NAME = re.compile(r"^checkpoint-(\d+)\.(?P<suffix>[A-Za-z0-9_.]+)$")


def checkpoint_path(directory: Path, step: int, suffix: str = "pt") -> Path:
    return Path(directory) / f"checkpoint-{step:09d}.{suffix}"


def list_checkpoints(directory: Path, suffix: str = "pt") -> list[tuple[int, Path]]:
    """(step, path) of every complete checkpoint, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _NAME.match(entry.name)
        if match and match.group("suffix") == suffix:
            found.append((int(match.group(1)), entry))
    return sorted(found)


def latest_checkpoint(directory: Path, suffix: str = "pt") -> tuple[int, Path] | None:
    found = list_checkpoints(directory, suffix)
    return found[-1] if found else None


def save_checkpoint(
    directory: Path,
    step: int,
    save: Callable[[Path], None],
    suffix: str = "pt",
    keep: int = 2,
) -> Path:
    """Write a checkpoint atomically and keep only the newest ``keep`` of them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = checkpoint_path(directory, step, suffix)
    # The temporary name keeps the suffix (Keras picks the format from it) but never matches _NAME.
    temporary = final.with_name(f".tmp-{os.getpid()}-{final.name}")
    save(temporary)
    os.replace(temporary, final)
    for _, old in list_checkpoints(directory, suffix)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)
    return final
