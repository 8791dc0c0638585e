"""The libfabric / NCCL environment a multi-host job needs on each instance type.

SageMaker's own containers decide this from hand-kept instance lists (the training toolkit's
SM_EFA_NCCL_INSTANCES / SM_EFA_RDMA_INSTANCES, copied into SDK v3's drivers). Those lists lag new
instance types: ml.p5e.48xlarge was missing, so NCCL fell back to TCP sockets and jobs hung at
communicator start (sagemaker-training-toolkit#240). Here the answer is derived from the
catalogue's ``efa`` / ``efa_rdma`` facts, which are dated and sourced in ``instances.yaml``.

The runtime (standard library only, shipped without the catalogue) keeps its own copy of the
RDMA families; ``efa_rdma_families`` is what a test holds that copy to.
"""

from __future__ import annotations

from smdist.catalog import closest_instance_types, instance, known_instance_types

__all__ = ["efa_rdma_families", "nccl_environment"]


def efa_rdma_families() -> frozenset[str]:
    """Families (``p5en``, ``p6-b200`` ...) whose EFA instance types support RDMA read."""
    return frozenset(
        info.family
        for info in map(instance, known_instance_types())
        if info is not None and info.efa_rdma
    )


def nccl_environment(instance_type: str) -> dict[str, str]:
    """Variables for NCCL (or Neuron's collectives) across hosts on ``instance_type``.

    - With EFA: FI_PROVIDER=efa, so libfabric (and the aws-ofi-nccl plugin) uses the adapter
      instead of TCP; NCCL_PROTO=simple, which SageMaker's toolkit sets on every EFA instance
      because EFA delivers out of order.
    - With RDMA read: FI_EFA_USE_DEVICE_RDMA=1 and RDMAV_FORK_SAFE=1, as the toolkit sets for
      its RDMA instances (libfabric aborts if RDMA is forced on an EFA without it).
    - A GPU instance without EFA: NCCL_IB_DISABLE=1, so NCCL does not probe InfiniBand.
    - A CPU instance: nothing (no NCCL).

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
    if info.accelerator == "cpu":
        return {}
    if not info.efa:
        return {"NCCL_IB_DISABLE": "1"}
    environment = {"FI_PROVIDER": "efa", "NCCL_PROTO": "simple"}
    if info.efa_rdma:
        environment.update({"FI_EFA_USE_DEVICE_RDMA": "1", "RDMAV_FORK_SAFE": "1"})
    return environment
