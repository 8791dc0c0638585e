"""Each rank of a ready PyTorch entry point takes its share of the host's cores: mpirun and
horovodrun set no thread count, and N ranks each running a pool the size of the machine run
many times slower than N sharing it. An OMP_NUM_THREADS the user or torchrun set is kept."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from smdist.runtime.torch_training import share_cpu_threads  # noqa: E402
from smdist.runtime.torch_training.device import LOCAL_PROCESS_COUNTS  # noqa: E402

CORES = os.cpu_count() or 1


@pytest.fixture(autouse=True)
def threads_restored(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for name in LOCAL_PROCESS_COUNTS:
        monkeypatch.delenv(name, raising=False)
    torch.set_num_threads(CORES)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("variable", LOCAL_PROCESS_COUNTS)
def test_a_rank_takes_its_share_of_the_cores_its_launcher_counts(monkeypatch, variable):
    monkeypatch.setenv(variable, str(CORES))  # as many ranks as cores: one thread each
    share_cpu_threads()
    assert torch.get_num_threads() == 1


def test_an_explicit_count_and_a_lone_process(monkeypatch):
    share_cpu_threads(CORES * 4)  # more ranks than cores still leaves each one thread
    assert torch.get_num_threads() == 1
    share_cpu_threads()  # no launcher count: the whole machine
    assert torch.get_num_threads() == CORES


def test_omp_num_threads_set_by_the_user_or_torchrun_is_kept(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", str(CORES))
    torch.set_num_threads(CORES)
    share_cpu_threads()
    assert torch.get_num_threads() == CORES
