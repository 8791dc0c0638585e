"""Each rank of a ready PyTorch entry point takes its share of the host's cores: mpirun and
horovodrun set no thread count, and N ranks each running a pool the size of the machine run
many times slower than N sharing it. An OMP_NUM_THREADS the user or torchrun set is kept."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from smdist.runtime.torch_training import share_cpu_threads  # noqa: E402

CORES = os.cpu_count() or 1
# Each launcher's variables for one rank of CORES on this host (one host).
LAUNCHERS = {
    "torchrun": {"RANK": "0", "WORLD_SIZE": str(CORES), "LOCAL_RANK": "0",
                 "LOCAL_WORLD_SIZE": str(CORES), "GROUP_RANK": "0"},
    "open-mpi": {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": str(CORES),
                 "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": str(CORES)},
    "horovod-gloo": {"HOROVOD_RANK": "0", "HOROVOD_SIZE": str(CORES), "HOROVOD_LOCAL_RANK": "0",
                     "HOROVOD_LOCAL_SIZE": str(CORES)},
}  # fmt: skip


@pytest.fixture(autouse=True)
def threads_restored(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for variables in LAUNCHERS.values():
        for name in variables:
            monkeypatch.delenv(name, raising=False)
    torch.set_num_threads(CORES)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_rank_takes_its_share_of_the_cores_its_launcher_counts(monkeypatch, launcher):
    for name, value in LAUNCHERS[launcher].items():  # as many ranks as cores: one thread each
        monkeypatch.setenv(name, value)
    share_cpu_threads()
    assert torch.get_num_threads() == 1


def test_an_explicit_count_and_a_lone_process(monkeypatch):
    share_cpu_threads(CORES * 4)  # more ranks than cores still leaves each one thread
    assert torch.get_num_threads() == 1
    share_cpu_threads()  # no launcher count: the whole machine
    assert torch.get_num_threads() == CORES


def test_omp_num_threads_set_by_the_user_or_torchrun_is_kept(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    for name, value in LAUNCHERS["open-mpi"].items():
        monkeypatch.setenv(name, value)
    torch.set_num_threads(CORES)
    share_cpu_threads()
    assert torch.get_num_threads() == CORES
