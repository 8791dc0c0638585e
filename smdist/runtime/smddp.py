"""The ``smddp`` process-group backend: the real one inside SageMaker, a stand-in elsewhere.

A script written for SageMaker Distributed Data Parallel (SMDDP) imports
``smdistributed.dataparallel.torch.torch_smddp`` and calls
``dist.init_process_group(backend="smddp")``. That library exists only in AWS Deep Learning
Containers, so the same script fails everywhere else. ``use_smddp()`` keeps it unchanged:

- inside a SageMaker container it imports the real library and nothing else happens;
- elsewhere it registers a backend named ``smddp`` with ``torch.distributed`` that builds an
  NCCL process group on GPU hosts and a gloo one on CPU hosts, and says so once in the log.

Either way it first fills torch's ``env://`` variables (RANK, WORLD_SIZE, MASTER_ADDR, ...)
from the detected cluster environment where the launcher did not set them: SageMaker starts
SMDDP jobs with mpirun, which sets only its own OMPI_* variables.

What the stand-in reproduces from the real library's documented limits:

- no sub-groups: ``torch.distributed.new_group()`` (and ``new_subgroups()``, which calls it)
  with the smddp backend raises on every rank, members of the group or not, as the real smddp
  backend does not support creating sub-process groups (PyTorch DDP jobs). torch builds a
  group's backend on its members only, so the refusal is made before torch is asked: every
  rank gets the same answer.

What it does not reproduce:

- SMDDP's own AllReduce/AllGather algorithms (CPU-offloaded gradient averaging, EFA-aware
  collectives) and therefore its speed: collectives are plain NCCL or gloo;
- the rule that smddp cannot run beside other backends: a ``new_group(backend="gloo")`` in the
  same job is not refused here;
- the instance types SMDDP supports (smdist's strategy checks those before a job starts);
- ``SMDATAPARALLEL_*`` tuning variables, which are ignored.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any

from smdist.runtime.torch_training import ensure_rendezvous_env, say

BACKEND_NAME = "smddp"
REAL_MODULE = "smdistributed.dataparallel.torch.torch_smddp"

_mode: str | None = None  # "real" or "stand-in" once use_smddp() has run


class SubGroupNotSupportedError(RuntimeError):
    """Raised by the stand-in where the real smddp backend would refuse a sub-group."""


def use_smddp() -> str:
    """Make ``init_process_group(backend="smddp")`` work here; returns "real" or "stand-in".

    Call once before ``init_process_group``; later calls return the same answer.
    """
    global _mode
    if _mode is None:
        ensure_rendezvous_env()
        if _import_real_library():
            _mode = "real"
        else:
            _register_stand_in()
            _mode = "stand-in"
    return _mode


def register_stand_in() -> None:
    """Register the stand-in backend (what the local backend's ``torch_smddp`` does on import)."""
    global _mode
    ensure_rendezvous_env()
    _register_stand_in()
    _mode = "stand-in"


def _import_real_library() -> bool:
    try:
        module = importlib.import_module(REAL_MODULE)
    except ImportError:
        return False
    # The local backend's hosts answer the name with the stand-in (SMDIST_STAND_IN).
    return not getattr(module, "SMDIST_STAND_IN", False)


def _register_stand_in() -> None:
    import torch
    import torch.distributed as dist

    _refuse_sub_groups_on_every_rank()
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return  # registered by an earlier import in this process
    devices = ["cuda"] if torch.cuda.is_available() else ["cpu"]
    dist.Backend.register_backend(
        BACKEND_NAME, _create_process_group, extended_api=True, devices=devices
    )


def _sub_group_refusal(call: str) -> SubGroupNotSupportedError:
    return SubGroupNotSupportedError(
        f"torch.distributed.{call} on the smddp backend: the smddp backend does not support "
        "sub-groups from torch.distributed.new_group(); SageMaker's SMDDP library refuses them "
        "for PyTorch DDP jobs, on every rank. Use the default process group (group=None), or "
        "init_process_group(backend='nccl') if the job needs sub-groups."
    )


def _refuse_sub_groups_on_every_rank() -> None:
    """Wrap ``torch.distributed.new_group`` so that a group on the smddp backend (named, or the
    default group's) is refused on every rank before torch builds anything."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    original = distributed_c10d.new_group
    if getattr(original, "smdist_smddp_guard", False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def new_group(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # torch says what is wrong with the call
        backend = bound.arguments.get("backend")
        if backend is None and dist.is_initialized():
            backend = dist.get_backend()
        if str(backend).lower() == BACKEND_NAME:
            ranks = bound.arguments.get("ranks")
            shown = "" if ranks is None else f"ranks={list(ranks)}"
            raise _sub_group_refusal(f"new_group({shown})")
        return original(*args, **kwargs)

    new_group.smdist_smddp_guard = True  # type: ignore[attr-defined]
    distributed_c10d.new_group = new_group  # new_subgroups() and others call it from here
    dist.new_group = new_group


def _create_process_group(options: Any, backend_options: Any) -> Any:
    """Called by torch.distributed for every group created with the smddp backend."""
    import torch
    import torch.distributed as dist

    # The default group has no explicit rank list; anything else came from new_group().
    # A group reached here without the wrapper above (a reference to new_group kept from
    # before the backend was registered): refused on its members at least.
    if list(options.global_ranks_in_group):
        raise _sub_group_refusal("new_group()")
    if torch.cuda.is_available():
        nccl_options = backend_options or dist.ProcessGroupNCCL.Options()
        nccl_options._timeout = options.timeout
        group = dist.ProcessGroupNCCL(
            options.store, options.group_rank, options.group_size, nccl_options
        )
        underlying = "NCCL"
    else:
        group = dist.ProcessGroupGloo(
            options.store, options.group_rank, options.group_size, options.timeout
        )
        underlying = "gloo"
    if options.group_rank == 0:
        say(
            f"smddp: SageMaker's SMDDP library is not installed here; the smddp backend is a "
            f"local stand-in running {underlying} collectives over {options.group_size} ranks "
            "(not reproduced: SMDDP's own AllReduce algorithms and their speed, "
            "SMDATAPARALLEL_* settings)"
        )
    return group
