"""Training data: ``*.npz`` files from the train channel or a learnable synthetic task, one
shard per data-parallel rank, each batch gathered from the whole tensors in one operation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.runtime.paths import channel_dir
from smdist.runtime.torch_training.process import ConfigurationError, say

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


class ShardedBatches:
    """A rank's batches of in-memory tensors, each gathered by one indexing operation.

    Iterating gives the batches of the sampler's current epoch (``sampler.set_epoch``): the
    samples, order and count of ``DataLoader(TensorDataset(*tensors), batch_size,
    sampler=sampler, drop_last=True)``, which collates them one sample at a time. Here each
    epoch's indices are one tensor on the tensors' device and a batch is ``tensor[rows]``: on a
    GPU, with the tensors resident there, no step copies anything from the host.
    """

    def __init__(
        self,
        tensors: tuple[torch.Tensor, ...],
        sampler: torch.utils.data.Sampler,
        batch_size: int,
    ) -> None:
        self.tensors, self.sampler, self.batch_size = tensors, sampler, batch_size

    def __len__(self) -> int:
        return len(self.sampler) // self.batch_size

    def epoch_indices(self) -> torch.Tensor:
        """This epoch's batches as rows of sample indices, [len(self), batch_size]."""
        steps = len(self)
        order = sampler_order(self.sampler)[: steps * self.batch_size]
        return order.reshape(steps, self.batch_size).to(self.tensors[0].device)

    def __iter__(self) -> Iterator[list[torch.Tensor]]:
        for rows in self.epoch_indices():
            yield [tensor[rows] for tensor in self.tensors]


def sampler_order(sampler: torch.utils.data.Sampler) -> torch.Tensor:
    """The indices ``iter(sampler)`` gives this epoch, as one int64 tensor.

    A ``DistributedSampler``'s are computed as it computes them (the seeded permutation, padded
    or cut to an equal share, every ``num_replicas``-th from ``rank``) without a Python list;
    any other sampler is listed.
    """
    import torch

    if type(sampler) is not torch.utils.data.DistributedSampler:
        return torch.as_tensor(list(sampler), dtype=torch.int64)
    size = len(sampler.dataset)
    if sampler.shuffle:
        generator = torch.Generator()
        generator.manual_seed(sampler.seed + sampler.epoch)
        order = torch.randperm(size, generator=generator)
    else:
        order = torch.arange(size)
    total = sampler.total_size
    if total > size:  # padded by repeating the order from its start
        order = order.repeat(-(-total // size))
    return order[sampler.rank : total : sampler.num_replicas]


def resident(
    tensors: tuple[torch.Tensor, ...], device: torch.device | None, rank: int = 0
) -> tuple[torch.Tensor, ...]:
    """The tensors on ``device``, moved once; kept on the host when a GPU lacks the room.

    Up to half of the GPU's free memory is taken for the data; a larger dataset stays in host
    memory (a line on rank 0 says so) and each batch is gathered there and copied by the step.
    """
    import torch

    if device is None or all(tensor.device == device for tensor in tensors):
        return tensors
    if device.type == "cuda":
        size = sum(tensor.nbytes for tensor in tensors)
        free, _ = torch.cuda.mem_get_info(device)
        if size > free // 2:
            if rank == 0:
                say(
                    f"the training data ({size / 2**30:.1f} GiB) stays in host memory: it is "
                    f"more than half of the GPU's free {free / 2**30:.1f} GiB"
                )
            return tensors
    return tuple(tensor.to(device) for tensor in tensors)


def sharded_loader(
    dataset: torch.utils.data.TensorDataset,
    batch_size: int,
    num_replicas: int,
    rank: int,
    seed: int,
    device: torch.device | None = None,
) -> tuple[ShardedBatches, torch.utils.data.DistributedSampler]:
    """One shard per data-parallel rank, equal and full batches everywhere.

    Equal batch counts keep ranks in lock-step (a rank with an extra batch would wait for a
    gradient all-reduce no peer joins); full batches keep microbatch splits exact. The
    dataset's tensors move to ``device`` once (see ``resident``), where batches are gathered.
    """
    import torch

    if batch_size <= 0:
        raise ConfigurationError(f"batch_size={batch_size} must be greater than 0")
    sampler = torch.utils.data.DistributedSampler(
        dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed, drop_last=True
    )
    loader = ShardedBatches(resident(dataset.tensors, device, rank), sampler, batch_size)
    if len(loader) == 0:
        raise ConfigurationError(
            f"{len(dataset)} samples over {num_replicas} ranks give fewer than one batch of "
            f"{batch_size} per rank; lower batch_size or give more samples"
        )
    return loader, sampler


def training_data(
    args: Any, replicas: int, rank: int, device: torch.device
) -> tuple[ShardedBatches, torch.utils.data.DistributedSampler, int, int]:
    """Seed torch, then the train channel's (or synthetic) data sharded over ``replicas``.

    Returns the loader (its batches already on ``device`` where it is a GPU with room for the
    data), its sampler, and the feature and class counts the model needs. The seed comes first
    so every rank also builds the same initial model next.
    """
    import torch

    torch.manual_seed(args.seed)
    dataset, features, classes = load_train_data(channel_dir("train"), args.samples, args.seed)
    loader, sampler = sharded_loader(dataset, args.batch_size, replicas, rank, args.seed, device)
    return loader, sampler, features, classes
