"""Checkpoint file naming, atomic writes and finding the newest one to resume from.

Framework-neutral: entry points pass a ``save`` callable that writes to a path (torch.save,
model.save_weights, ...). Files are named ``checkpoint-<step>.<suffix>`` with a zero-padded
step so the newest sorts last; a write goes to a temporary name first and is renamed into place,
so a job killed mid-write never leaves a truncated file that a restart would load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from .settings import LOCAL_JOB

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


def fresh_start_hint(directory: Path, environ: Mapping[str, str] = os.environ) -> str:
    """How to start without the checkpoints a job found, in the words of where it runs."""
    if environ.get(LOCAL_JOB):
        return "run `smdist run --fresh ...` (smdist.fit: options={'fresh': True})"
    if environ.get("TRAINING_JOB_NAME"):  # SageMaker names every training container's job
        return "give the job a checkpoint s3_uri that holds no checkpoints"
    return f"empty {directory}"


def nothing_left_to_train(
    directory: Path,
    step: int,
    epoch: int,
    epochs: int,
    max_steps: int = 0,
    suffix: str = "pt",
    environ: Mapping[str, str] = os.environ,
) -> str:
    """The line a ready script prints when the checkpoint it resumed from is already where
    training would end: where that checkpoint is, how far it got, and what to do.

    ``max_steps``: the limit that ended training when it was max_steps, not ``epochs``.
    """
    found = latest_checkpoint(directory, suffix)
    source = found[1] if found is not None else directory
    if max_steps:
        where, more = f"is at step {step} and max_steps is {max_steps}", "max_steps"
    else:
        where, more = f"is at epoch {epoch} of {epochs} (step {step})", "epochs"
    return (
        f"nothing left to train: the checkpoint restored from {source} {where}; to start fresh "
        f"{fresh_start_hint(directory, environ)}, or raise {more} to train on"
    )
