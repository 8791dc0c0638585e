"""Training data: ``*.npz`` files from the train channel or a learnable synthetic task, one
shard per data-parallel rank."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.runtime.paths import channel_dir
from smdist.runtime.torch_training.process import ConfigurationError

if TYPE_CHECKING:
    import torch


def synthetic_classification(
    samples: int, features: int = 32, classes: int = 4, seed: int = 42
) -> torch.utils.data.TensorDataset:
    """A learnable task: labels come from a fixed random two-layer teacher network.

    Every rank builds the same dataset from the seed; the sampler then gives each rank its shard.
    """
    import torch

    if samples <= 0:
        raise ConfigurationError(f"samples={samples} must be greater than 0")
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=generator)
    hidden = torch.tanh(x @ torch.randn(features, 2 * features, generator=generator))
    y = (hidden @ torch.randn(2 * features, classes, generator=generator)).argmax(dim=1)
    return torch.utils.data.TensorDataset(x, y)


def load_npz_dataset(directory: Path) -> torch.utils.data.TensorDataset:
    """Every ``*.npz`` in ``directory`` (sorted by name), arrays ``x`` [N, F] and ``y`` [N]."""
    import numpy as np
    import torch

    files = sorted(Path(directory).glob("*.npz"))
    if not files:
        raise ConfigurationError(
            f"the train channel {directory} holds no *.npz files; give files with arrays "
            "x (float32 [N, F]) and y (int64 [N]), or no train channel for synthetic data"
        )
    xs, ys = [], []
    for file in files:
        with np.load(file) as arrays:
            if "x" not in arrays or "y" not in arrays:
                raise ConfigurationError(
                    f"{file.name} has arrays {sorted(arrays.files)}; it needs x and y"
                )
            x, y = arrays["x"], arrays["y"]
        if x.ndim != 2 or y.ndim != 1 or len(x) != len(y):
            raise ConfigurationError(
                f"{file.name}: x must be [N, F] and y [N] with the same N; got x{list(x.shape)} "
                f"and y{list(y.shape)}"
            )
        if xs and x.shape[1] != xs[0].shape[1]:
            raise ConfigurationError(
                f"{file.name} has {x.shape[1]} features but {files[0].name} has {xs[0].shape[1]}"
            )
        xs.append(x.astype(np.float32))
        ys.append(y.astype(np.int64))
    x_all = torch.from_numpy(np.concatenate(xs))
    y_all = torch.from_numpy(np.concatenate(ys))
    if int(y_all.min()) < 0:
        raise ConfigurationError("labels y must be class indices 0, 1, 2, ...; found negatives")
    return torch.utils.data.TensorDataset(x_all, y_all)


def load_train_data(
    channel: Path | None, samples: int, seed: int
) -> tuple[torch.utils.data.TensorDataset, int, int]:
    """The dataset with its feature and class counts: from the channel, else synthetic."""
    dataset = load_npz_dataset(channel) if channel else synthetic_classification(samples, seed=seed)
    x, y = dataset.tensors
    return dataset, int(x.shape[1]), int(y.max()) + 1


def sharded_loader(
    dataset: torch.utils.data.Dataset,
    batch_size: int,
    num_replicas: int,
    rank: int,
    seed: int,
    pin_memory: bool = False,
) -> tuple[torch.utils.data.DataLoader, torch.utils.data.DistributedSampler]:
    """One shard per data-parallel rank, equal and full batches everywhere.

    Equal batch counts keep ranks in lock-step (a rank with an extra batch would wait for a
    gradient all-reduce no peer joins); full batches keep microbatch splits exact.
    """
    import torch

    if batch_size <= 0:
        raise ConfigurationError(f"batch_size={batch_size} must be greater than 0")
    sampler = torch.utils.data.DistributedSampler(
        dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed, drop_last=True
    )
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, sampler=sampler, drop_last=True, pin_memory=pin_memory
    )
    if len(loader) == 0:
        raise ConfigurationError(
            f"{len(dataset)} samples over {num_replicas} ranks give fewer than one batch of "
            f"{batch_size} per rank; lower batch_size or give more samples"
        )
    return loader, sampler


def training_data(
    args: Any, replicas: int, rank: int, device: torch.device
) -> tuple[torch.utils.data.DataLoader, torch.utils.data.DistributedSampler, int, int]:
    """Seed torch, then the train channel's (or synthetic) data sharded over ``replicas``.

    Returns the loader, its sampler, and the feature and class counts the model needs. The
    seed comes first so every rank also builds the same initial model next.
    """
    import torch

    torch.manual_seed(args.seed)
    dataset, features, classes = load_train_data(channel_dir("train"), args.samples, args.seed)
    loader, sampler = sharded_loader(
        dataset, args.batch_size, replicas, rank, args.seed, pin_memory=device.type == "cuda"
    )
    return loader, sampler, features, classes
