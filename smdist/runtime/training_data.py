"""The training arrays every ready entry point uses, and a step-addressable order over them.

Entry points train on files from the ``train`` channel (``*.npz`` with ``x`` float32 [N, F] and
``y`` int64 [N]) or, without one, on a synthetic classification problem that a small model can
learn. Every rank builds the same arrays and the same per-epoch order from the seed, then takes
its own share: no rank ever needs another rank's data to agree on what step k contains, which is
what lets a restarted job continue exactly where its checkpoint stopped.

numpy is imported inside the functions: this package is standard-library-only at import time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smdist.runtime.paths import channel_dir

SYNTHETIC_FEATURES = 16
SYNTHETIC_CLASSES = 4


@dataclass
class TrainingArrays:
    x: Any  # numpy float32 [N, F]
    y: Any  # numpy int64 [N]
    source: str  # where the data came from, for the log

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])

    @property
    def num_classes(self) -> int:
        return int(self.y.max()) + 1


def synthetic_arrays(samples: int, seed: int) -> TrainingArrays:
    """A linearly separable-with-noise 4-class problem: loss falls within a few dozen steps."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, SYNTHETIC_FEATURES), dtype=np.float32)
    projection = rng.standard_normal((SYNTHETIC_FEATURES, SYNTHETIC_CLASSES)).astype(np.float32)
    noise = 0.1 * rng.standard_normal((samples, SYNTHETIC_CLASSES)).astype(np.float32)
    y = np.argmax(x @ projection + noise, axis=1).astype(np.int64)
    return TrainingArrays(x=x, y=y, source=f"synthetic ({samples} samples, seed {seed})")


def channel_arrays(directory: Path) -> TrainingArrays:
    """Concatenate every ``*.npz`` in a channel directory, in file-name order."""
    import numpy as np

    files = sorted(Path(directory).glob("*.npz"))
    if not files:
        raise FileNotFoundError(
            f"the train channel {directory} holds no *.npz files; provide files with arrays "
            "'x' (float32 [N, F]) and 'y' (int64 [N]), or run without a train channel to use "
            "synthetic data"
        )
    xs, ys = [], []
    for file in files:
        with np.load(file) as data:
            missing = {"x", "y"} - set(data.files)
            if missing:
                raise ValueError(
                    f"{file} lacks array(s) {sorted(missing)}; each file needs 'x' (float32 "
                    f"[N, F]) and 'y' (int64 [N]), found {sorted(data.files)}"
                )
            xs.append(np.asarray(data["x"], dtype=np.float32))
            ys.append(np.asarray(data["y"], dtype=np.int64))
    x, y = np.concatenate(xs), np.concatenate(ys)
    if x.ndim != 2 or y.ndim != 1 or len(x) != len(y):
        raise ValueError(
            f"train channel arrays have shapes x{x.shape} and y{y.shape}; expected x [N, F] and "
            "y [N] with the same N"
        )
    return TrainingArrays(x=x, y=y, source=f"{len(files)} file(s) in {directory}")


def training_arrays(
    samples: int, seed: int, environ: Mapping[str, str] = os.environ
) -> TrainingArrays:
    """The train channel's arrays when the job has one, synthetic ones otherwise."""
    directory = channel_dir("train", environ)
    if directory is not None and directory.is_dir():
        return channel_arrays(directory)
    return synthetic_arrays(samples, seed)


@dataclass(frozen=True)
class StepPlan:
    """How many optimizer steps a job takes, given the data, the global batch and the limits."""

    steps_per_epoch: int
    total_steps: int

    def epoch_of(self, step: int) -> int:
        return step // self.steps_per_epoch

    def epoch_segments(self, start_step: int) -> list[tuple[int, int, int]]:
        """(epoch, first step, end step) for every epoch that still has steps after start_step."""
        segments = []
        step = start_step
        while step < self.total_steps:
            epoch = self.epoch_of(step)
            end = min((epoch + 1) * self.steps_per_epoch, self.total_steps)
            segments.append((epoch, step, end))
            step = end
        return segments


def plan_steps(samples: int, global_batch: int, epochs: int, max_steps: int) -> StepPlan:
    steps_per_epoch = samples // global_batch
    if steps_per_epoch < 1:
        raise ValueError(
            f"the global batch ({global_batch} = batch_size x world size) exceeds the "
            f"{samples} training samples; lower --batch_size or provide more data"
        )
    total = epochs * steps_per_epoch
    if max_steps > 0:
        total = min(total, max_steps)
    return StepPlan(steps_per_epoch=steps_per_epoch, total_steps=total)


def epoch_order(num_samples: int, epoch: int, seed: int) -> Any:
    """The sample order of one epoch: the same on every rank, different every epoch."""
    import numpy as np

    return np.random.default_rng([seed, epoch]).permutation(num_samples)


def batch_indices(
    num_samples: int, seed: int, global_batch: int, epoch: int, first_step: int, end_step: int
) -> Any:
    """Sample indices of global batches ``first_step .. end_step - 1`` (steps count from 0).

    Returns an int64 array of shape [end_step - first_step, global_batch].
    """
    order = epoch_order(num_samples, epoch, seed)
    steps_per_epoch = num_samples // global_batch
    begin = (first_step - epoch * steps_per_epoch) * global_batch
    end = (end_step - epoch * steps_per_epoch) * global_batch
    return order[begin:end].reshape(end_step - first_step, global_batch)


def rank_slice(global_batch_indices: Any, rank: int, world_size: int) -> Any:
    """This rank's contiguous share of each global batch ([steps, global_batch // world])."""
    per_rank = global_batch_indices.shape[1] // world_size
    return global_batch_indices[:, rank * per_rank : (rank + 1) * per_rank]
