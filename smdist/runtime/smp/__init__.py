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
  and over the data-parallel group, model calls and ``model.backward`` refused outside a step;
- the topology, as the library assigns it for ``pipeline_parallel_degree`` (``partitions``),
  ``tensor_parallel_degree`` and ``placement_strategy`` (``cluster`` = ``DPT``, ``spread`` =
  ``TPD``, or any ordering of D, P, T; ``smdist.runtime.smp.topology``): ``rank``, ``size``,
  ``local_rank``, ``local_size``, ``dp_*``, ``rdp_*``, ``mp_*``, ``pp_*``, ``tp_*``
  (``mp_size() == pp_size() * tp_size()``, ``dp_size() == size() // pp_size()``,
  ``rdp_size() == dp_size() // tp_size()``), ``get_{dp,rdp,mp,pp,tp}_group`` (lists of global
  ranks, with the library's optional arguments) and ``get_{dp,rdp,mp,pp,tp,world}_process_group``
  (torch.distributed groups); ``barrier`` / ``*_barrier``, ``allgather``, ``broadcast``,
  ``send`` and ``recv_from`` over those groups;
- ``DistributedModel`` (one per job, parameters broadcast from rank 0, gradients averaged over
  ``get_dp_group()``, state dicts with the wrapped module's keys, ``local_*`` accessors,
  post-partition hooks) and ``DistributedOptimizer`` (still a ``torch.optim.Optimizer``,
  ``local_state_dict``);
- ``save`` / ``load`` with ``partial=`` (partial files are named ``<f>_<mp_rank>``; a full
  file is written by rank 0 alone; string file names only, as in the library);
  ``is_initialized``, ``state.model``, ``state.optimizer``, ``state.cfg``.

What it does not reproduce: the model is never split. Every rank holds and computes the whole
model, and its gradients are averaged over its data-parallel group, as SMP averages the
parameters it does not split. The stages of one pipeline share a ``dp_rank()``, so with data
sharded by ``dp_rank()`` each data-parallel group sees every shard and all ranks keep the same
weights; each rank repeats the work the library would spread over its model-parallel group.
So there is no pipeline partitioning across devices (``auto_partition``, ``smp.partition``,
interleaved/simple schedules), no tensor parallelism (``smp.nn`` distributed modules,
``tensor_parallelism()`` has no effect, no reduced-data-parallel averaging of split
parameters), no activation checkpointing or offloading, no optimizer-state or sharded data
parallelism (``shard_optimizer_state``, ``sharded_data_parallel_degree``), no fp16
module/optimizer wrappers or loss scaling (use torch autocast), no model tracing, and no
``save_checkpoint`` / ``resume_from_checkpoint``. Memory use and speed are those of plain DDP
with the whole model on every rank.
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
