"""TensorFlow's MultiWorkerMirroredStrategy as smdist sets it up, and the eager collectives
the entry points run over it (a worker's rank, a sum or broadcast of packed arrays)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COMMUNICATION_CHOICES = ("auto", "ring", "nccl")


def multi_worker_strategy(tf: Any, communication: str, timeout_seconds: int) -> Any:
    """MultiWorkerMirroredStrategy reading TF_CONFIG, with the collective settings smdist sets.

    ``timeout_seconds`` > 0 bounds every collective: without it a hung or vanished worker
    leaves its peers waiting forever.
    """
    if communication not in COMMUNICATION_CHOICES:
        raise ValueError(
            f"SMDIST_COMMUNICATION={communication!r} is not a collective implementation; "
            f"use one of {', '.join(COMMUNICATION_CHOICES)}"
        )
    if timeout_seconds < 0:
        raise ValueError(
            f"SMDIST_COLLECTIVE_TIMEOUT={timeout_seconds} must be >= 0 (seconds; 0 keeps "
            "TensorFlow's default of no timeout)"
        )
    implementations = tf.distribute.experimental.CommunicationImplementation
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=getattr(implementations, communication.upper()),
        timeout_seconds=float(timeout_seconds) if timeout_seconds else None,
    )
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def worker_rank(strategy: Any) -> int:
    """This worker's position in the collective: the chief (if any) is 0, workers follow."""
    resolver = strategy.cluster_resolver
    task_type, task_id = resolver.task_type, resolver.task_id
    if not task_type:
        return 0
    cluster = resolver.cluster_spec().as_dict()
    has_chief = bool(cluster.get("chief"))
    if task_type == "chief":
        return 0
    return int(task_id) + (1 if has_chief else 0)


def sum_over_replicas(tf: Any, strategy: Any, values: Any, first_replica_only: bool) -> Any:
    """All-reduce (sum) a float64 vector over every replica of every worker, eagerly.

    With ``first_replica_only`` every replica but the global first contributes zeros, which
    turns the sum into a broadcast from the chief. Call it on every worker in the same order.
    """
    local = tf.constant(values, dtype=tf.float64)
    zeros = tf.zeros_like(local)

    def replica_value(context: Any) -> Any:
        if first_replica_only and context.replica_id_in_sync_group != 0:
            return zeros
        return local

    distributed = strategy.experimental_distribute_values_from_function(replica_value)
    return strategy.reduce(tf.distribute.ReduceOp.SUM, distributed, axis=None).numpy()


def pack_arrays(arrays: Sequence[Any]) -> Any:
    """One float64 vector of several arrays: a single collective instead of one per array.

    float64 holds float32 values and int64 counters below 2**53 exactly.
    """
    import numpy as np

    if not arrays:
        return np.zeros(0, dtype=np.float64)
    return np.concatenate([np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays])


def unpack_arrays(vector: Any, like: Sequence[Any]) -> list[Any]:
    import numpy as np

    arrays, offset = [], 0
    for template in like:
        template = np.asarray(template)
        arrays.append(vector[offset : offset + template.size].reshape(template.shape))
        arrays[-1] = arrays[-1].astype(template.dtype)
        offset += template.size
    return arrays
