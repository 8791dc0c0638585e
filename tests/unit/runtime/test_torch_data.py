"""The PyTorch entry points' batches: one gather per tensor, DistributedSampler's shards.

``ShardedBatches`` replaced a DataLoader that collated one sample at a time; these tests hold it
to that loader's batches (per rank, per epoch, full batches only) and to the loop's resume.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from smdist.runtime.torch_training import (  # noqa: E402
    LoopSettings,
    ShardedBatches,
    run_training,
    sharded_loader,
)
from smdist.runtime.torch_training.data import resident, sampler_order  # noqa: E402

pytestmark = pytest.mark.torch


def numbered(samples: int, features: int = 3) -> torch.utils.data.TensorDataset:
    """Sample i has features i*features .. and label i, so a batch shows which samples it holds."""
    x = torch.arange(samples * features, dtype=torch.float32).view(samples, features)
    return torch.utils.data.TensorDataset(x, torch.arange(samples))


def collated(dataset, sampler, batch_size: int) -> list[list[torch.Tensor]]:
    """The batches the DataLoader of the entry points used to give, one sample at a time."""
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, sampler=sampler, drop_last=True
    )
    return list(loader)


@pytest.mark.parametrize("samples", [1, 7, 64, 101])
@pytest.mark.parametrize("replicas", [1, 2, 3, 8])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_the_order_is_the_distributed_samplers_for_every_rank_and_epoch(
    samples, replicas, shuffle, drop_last
):
    dataset = numbered(samples)
    for rank in range(replicas):
        sampler = torch.utils.data.DistributedSampler(
            dataset, replicas, rank, shuffle=shuffle, seed=5, drop_last=drop_last
        )
        for epoch in (0, 1, 7):
            sampler.set_epoch(epoch)
            order = sampler_order(sampler)
            assert order.dtype == torch.int64
            assert order.tolist() == list(sampler), (rank, epoch)


def test_any_other_sampler_is_listed():
    sampler = torch.utils.data.RandomSampler(range(10), generator=torch.Generator().manual_seed(1))
    expected = list(sampler)
    sampler.generator.manual_seed(1)
    assert sampler_order(sampler).tolist() == expected


@pytest.mark.parametrize(("samples", "replicas", "batch_size"), [(103, 2, 8), (96, 3, 4)])
def test_batches_equal_the_collating_loaders_for_every_rank_and_epoch(
    samples, replicas, batch_size
):
    dataset = numbered(samples)
    shards = []
    for rank in range(replicas):
        loader, sampler = sharded_loader(dataset, batch_size, replicas, rank, seed=42)
        # Each rank's share is cut to an equal length, then to full batches (103 // 2 = 51
        # samples per rank: 6 batches of 8, the last 3 samples dropped).
        assert len(loader) == len(sampler) // batch_size == (samples // replicas) // batch_size
        for epoch in range(3):
            sampler.set_epoch(epoch)
            batches = list(loader)
            expected = collated(dataset, sampler, batch_size)
            assert len(batches) == len(expected) == len(loader)
            for got, want in zip(batches, expected, strict=True):
                assert len(got) == len(want) == 2
                for got_tensor, want_tensor in zip(got, want, strict=True):
                    assert got_tensor.dtype == want_tensor.dtype
                    assert torch.equal(got_tensor, want_tensor)
            shards.append(torch.cat([labels for _, labels in batches]))
    # Within an epoch the ranks' samples are disjoint.
    first_epoch = torch.cat(shards[::3])
    assert len(set(first_epoch.tolist())) == len(first_epoch)


def test_the_epoch_changes_the_order_only_through_set_epoch():
    loader, sampler = sharded_loader(numbered(64), 8, 2, 0, seed=1)
    first = [labels.tolist() for _, labels in loader]
    assert [labels.tolist() for _, labels in loader] == first
    sampler.set_epoch(1)
    assert [labels.tolist() for _, labels in loader] != first


class Recording:
    """A tensor that records every indexing of it."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor, self.indexed = tensor, []

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    def __getitem__(self, rows):
        self.indexed.append(rows)
        return self.tensor[rows]


def test_each_batch_is_one_indexing_of_each_whole_tensor():
    dataset = numbered(50)
    sampler = torch.utils.data.DistributedSampler(dataset, 2, 1, seed=3, drop_last=True)
    tensors = tuple(Recording(tensor) for tensor in dataset.tensors)
    loader = ShardedBatches(tensors, sampler, batch_size=4)
    batches = list(loader)
    assert len(batches) == 6  # 25 samples on this rank: 6 full batches, 1 sample dropped
    for recording in tensors:
        assert len(recording.indexed) == len(batches)
        for rows in recording.indexed:
            assert isinstance(rows, torch.Tensor) and rows.shape == (4,)
    expected = collated(dataset, sampler, 4)
    assert all(torch.equal(got[0], want[0]) for got, want in zip(batches, expected, strict=True))


def test_the_indices_live_on_the_tensors_device():
    loader, _ = sharded_loader(numbered(40), 4, 2, 0, seed=0, device=torch.device("cpu"))
    indices = loader.epoch_indices()
    assert indices.shape == (len(loader), 4) and indices.device == loader.tensors[0].device


def test_data_too_large_for_the_gpu_stays_on_the_host(monkeypatch, capsys):
    tensors = numbered(1000).tensors
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (1000, 80_000))
    assert resident(tensors, torch.device("cuda", 0), rank=0) is tensors
    assert "stays in host memory" in capsys.readouterr().err
    assert resident(tensors, None) is tensors


class Stop:
    requested = False


def trained_labels(loader, sampler, start_step: int) -> list[list[int]]:
    """The batches (as sample labels) run_training feeds the step from ``start_step`` on."""
    seen = []

    def train_step(batch):
        seen.append(batch[1].tolist())
        return torch.tensor(0.0)

    run_training(
        loader,
        sampler,
        train_step,
        LoopSettings(epochs=3, max_steps=0, log_every=100, checkpoint_every=0, global_batch=8),
        checkpoint=lambda step: None,
        stop=Stop(),
        agree=lambda value, count, stop: (float(value) / count, stop),
        is_main=False,
        start_step=start_step,
    )
    return seen


@pytest.mark.parametrize("start_step", [0, 3, 6, 7, 11])
def test_a_resumed_run_skips_the_same_batches_as_the_collating_loader(start_step):
    dataset = numbered(61)
    loader, sampler = sharded_loader(dataset, 4, 2, 1, seed=9)
    assert len(loader) == 7  # 30 samples on this rank
    before = torch.utils.data.DistributedSampler(dataset, 2, 1, seed=9, drop_last=True)
    collating = torch.utils.data.DataLoader(dataset, batch_size=4, sampler=before, drop_last=True)
    resumed = trained_labels(loader, sampler, start_step)
    assert resumed == trained_labels(collating, before, start_step)
    assert len(resumed) == 3 * 7 - start_step
    assert resumed == trained_labels(loader, sampler, 0)[start_step:]
