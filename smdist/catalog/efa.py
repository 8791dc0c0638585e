"""The libfabric / NCCL environment a multi-host job needs on each instance type.

SageMaker's own containers decide this from hand-kept instance lists, which lag new instance
types (sagemaker-training-toolkit#240). Here the answer follows the catalogue's ``efa`` /
``efa_rdma`` / GPU facts, dated and sourced in ``instances.yaml``; which variables those facts
ask for is the container contract's (``smdist.contract.fabric``), the same function that gives
a planned job's hosts their settings.
"""

from __future__ import annotations

from smdist.catalog import closest_instance_types, instance
from smdist.contract.fabric import efa_environment

__all__ = ["nccl_environment"]


def nccl_environment(instance_type: str) -> dict[str, str]:
    """Variables for NCCL (or Neuron's collectives) across hosts on ``instance_type``
    (``contract.fabric.efa_environment`` of its facts; a CPU instance: none).

    Raises ValueError, with suggestions, for an instance type the catalogue does not know.
    """
    info = instance(instance_type)
    if info is None:
        suggestions = closest_instance_types(instance_type)
        hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
        raise ValueError(
            f"Unknown instance type {instance_type!r}: the catalogue has no EFA facts for it; "
            f"use one of smdist.catalog.known_instance_types().{hint}"
        )
    if info.accelerator == "cpu":  # no NCCL, nor Neuron's collectives
        return {}
    efa, rdma = info.fabric
    return efa_environment(efa, rdma, gpus=max(info.accelerators, 1))
