"""Stand-in for ``smdistributed.dataparallel.torch.distributed``, SMDDP's older API (library
< 1.4, still in AWS's examples): ``init_process_group()`` starts the ``smddp`` backend, the
rest is ``torch.distributed`` under the names the library used. See ``smdist.runtime.smddp``."""

import os

import torch.distributed as _dist
from torch.distributed import (  # noqa: F401 - the library's names
    ReduceOp,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_rank,
    get_world_size,
    is_initialized,
    reduce,
)

from smdist.runtime.smddp import register_stand_in

SMDIST_STAND_IN = True


def is_available() -> bool:
    return True


def init_process_group(*args, **kwargs) -> None:  # noqa: ANN002, ANN003 - the library's
    """Start the default process group on the smddp backend (the library took no backend)."""
    register_stand_in()
    if _dist.is_initialized():
        return
    kwargs.pop("backend", None)
    if args:  # the library's first positional argument was the backend as well
        args = args[1:]
    _dist.init_process_group("smddp", *args, **kwargs)


def get_local_rank() -> int:
    return int(os.environ["LOCAL_RANK"])


def get_local_size() -> int:
    # torchrun sets LOCAL_WORLD_SIZE; mpirun (SageMaker's launcher for SMDDP) its own.
    for name in ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        if os.environ.get(name):
            return int(os.environ[name])
    return int(os.environ["WORLD_SIZE"])


get_local_world_size = get_local_size
