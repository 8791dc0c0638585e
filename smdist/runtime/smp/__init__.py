"""SageMaker Model Parallel v1 (``smdistributed.modelparallel.torch``), real or stand-in.

The SMP v1 library ships only inside AWS Deep Learning Containers. ``import_smp()`` returns it
there; everywhere else it returns a stand-in with the same names, so one script runs in a
SageMaker job, under the local backend and under a plain ``mpirun -np 2``::

    from smdist.runtime.smp import import_smp

    smp = import_smp()
    smp.init()                      # reads SM_HP_MP_PARAMETERS, as the library does
    model = smp.DistributedModel(model)
    optimizer = smp.DistributedOptimizer(optimizer)

    @smp.step
    def train_step(model, data, target):
        loss = loss_fn(model(data), target)
        model.backward(loss)
        return loss

    loss = train_step(model, data, target).reduce_mean()
    optimizer.step()

The stand-in says so once in the log (rank 0, at ``smp.init()``).

What the stand-in reproduces:

- the configuration: ``SM_HP_MP_PARAMETERS`` (or the dict given to ``init``) is parsed and
  checked the way the library documents it (types, choices, ``partitions`` as the older name of
  ``pipeline_parallel_degree``, tensor parallelism needing ``ddp``, the processes dividing into
  model replicas);
- ``@smp.step``: arguments split into ``microbatches`` along the batch axis (``non_split_inputs``,
  ``input_split_axes``, ``smp_slice`` objects), the body run once per microbatch, tensors
  returned as ``StepOutput`` (``reduce_mean``, ``reduce_sum``, ``concat``, ``stack``,
  ``outputs``), gradients averaged over microbatches (``average_grads_across_microbatches``)
  and over ranks, model calls and ``model.backward`` refused outside a step;
- ranks and groups (``rank``, ``size``, ``local_rank``, ``local_size``, ``dp_*``, ``rdp_*``,
  ``mp_*``, ``pp_*``, ``tp_*``, ``get_dp_group``, ``get_mp_group``,
  ``get_world_process_group``), ``barrier``, ``allgather``, ``broadcast`` / ``recv_from``;
- ``DistributedModel`` (one per job, parameters broadcast from rank 0, state dicts with the
  wrapped module's keys, ``local_*`` accessors, post-partition hooks) and
  ``DistributedOptimizer`` (still a ``torch.optim.Optimizer``, ``local_state_dict``);
- ``save`` / ``load`` with ``partial=`` (partial files are named ``<f>_<mp_rank>``; string
  file names only, as in the library); ``is_initialized``, ``state.model``,
  ``state.optimizer``, ``state.cfg``.

What it does not reproduce: every rank holds the whole model and is a data-parallel replica
(``mp_size() == 1``, ``dp_size() == size()``), whatever the configuration asks for. So there is
no pipeline partitioning across devices (``pipeline_parallel_degree``, ``partitions``,
``auto_partition``, ``placement_strategy``, interleaved/simple schedules), no tensor
parallelism (``smp.nn`` distributed modules, ``tensor_parallelism()`` has no effect), no
activation checkpointing or offloading, no optimizer-state or sharded data parallelism
(``shard_optimizer_state``, ``sharded_data_parallel_degree``), no fp16 module/optimizer
wrappers or loss scaling (use torch autocast), no model tracing, no ``save_checkpoint`` /
``resume_from_checkpoint``, no point-to-point ``send``, and no process groups for the
model-parallel dimensions. Memory use and speed are those of plain DDP.
"""

from __future__ import annotations

import importlib
from types import ModuleType

REAL_MODULE = "smdistributed.modelparallel.torch"


def import_smp() -> ModuleType:
    """The real ``smdistributed.modelparallel.torch`` when installed, else the stand-in."""
    try:
        module = importlib.import_module(REAL_MODULE)
    except ImportError:
        module = None
    # On the local backend's hosts the name answers with the stand-in (SMDIST_STAND_IN).
    if module is None or getattr(module, "SMDIST_STAND_IN", False):
        return importlib.import_module("smdist.runtime.smp.api")
    return module


def using_stand_in(module: ModuleType) -> bool:
    """True when ``module`` (from ``import_smp()``) is the local stand-in."""
    return module.__name__ != REAL_MODULE
