"""The model and what is kept of it: a small classifier, weight checksums, checkpoints (the main
rank writes; it reads the newest and hands it to every rank) and the saved model."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.runtime.checkpoints import latest_checkpoint, save_checkpoint
from smdist.runtime.torch_training.process import ConfigurationError, say

if TYPE_CHECKING:
    import torch


def build_classifier(features: int, classes: int, hidden: int = 128) -> torch.nn.Module:
    """A small MLP: big enough for real gradients, small enough for CPU tests."""
    from torch import nn

    if hidden <= 0:
        raise ConfigurationError(f"hidden_size={hidden} must be greater than 0")
    return nn.Sequential(
        nn.Linear(features, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, classes),
    )


def weights_checksum(state: Mapping[str, Any]) -> str:
    """A short digest of a state dict's tensors: equal on every rank iff the weights are."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(state):
        value = state[name]
        if isinstance(value, torch.Tensor):
            digest.update(name.encode())
            digest.update(value.detach().to("cpu").contiguous().view(torch.uint8).numpy())
    return digest.hexdigest()[:16]


def report_checksum(rank: int, state: Mapping[str, Any]) -> None:
    """Every rank prints its checksum; a test (or a person) compares them."""
    sys.stdout.write(f"smdist: rank={rank} weights_checksum={weights_checksum(state)}\n")
    sys.stdout.flush()


def write_checkpoint(directory: Path, step: int, payload: dict) -> Path:
    """Atomically write ``payload`` (plus the step) as the newest checkpoint; returns its path.

    Quietly: the training loop decides which checkpoints a line announces.
    """
    import torch

    return save_checkpoint(directory, step, lambda p: torch.save({**payload, "step": step}, p))


def read_latest_checkpoint(directory: Path, is_main: bool) -> dict | None:
    """The newest checkpoint on every rank: the main rank reads it and broadcasts it.

    On SageMaker each host has its own checkpoint directory; only the main host is sure to have
    the file, so the other ranks never look for it.
    """
    import torch
    import torch.distributed as dist

    payload = None
    if is_main:
        found = latest_checkpoint(directory)
        if found is not None:
            payload = torch.load(found[1], map_location="cpu", weights_only=True)
            say(f"resuming from checkpoint step={payload['step']} ({found[1]})")
    if dist.is_initialized() and dist.get_world_size() > 1:
        box = [payload]
        dist.broadcast_object_list(box, src=0)
        payload = box[0]
    return payload


def save_weights(model: Any, model_dir: Path) -> Path:
    """Save ``model``'s state dict as ``model.pt`` in ``model_dir`` (the main rank calls this)."""
    import torch

    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / "model.pt"
    torch.save(model.state_dict(), path)
    say(f"model saved to {path}")
    return path


def resume(model: Any, optimizer: Any, directory: Path, is_main: bool) -> int:
    """Load the newest checkpoint into ``model`` and ``optimizer`` on every rank.

    Returns the step it was taken at, 0 when there is none.
    """
    resumed = read_latest_checkpoint(directory, is_main)
    if resumed is None:
        return 0
    model.load_state_dict(resumed["model"])
    optimizer.load_state_dict(resumed["optimizer"])
    return int(resumed["step"])


def main_rank_checkpoints(
    model: Any, optimizer: Any, directory: Path, is_main: bool
) -> Callable[[int], Path | None]:
    """``checkpoint(step)`` for the training loop: the main rank writes model and optimizer
    and returns the file; the other ranks write nothing and return None."""

    def checkpoint(step: int) -> Path | None:
        if not is_main:
            return None
        payload = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
        return write_checkpoint(directory, step, payload)

    return checkpoint
