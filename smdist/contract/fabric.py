"""NCCL and libfabric settings of a host, from the launch: the one place they are decided.

SageMaker's containers decide these from hand-kept instance lists (the training toolkit's
SM_EFA_NCCL_INSTANCES / SM_EFA_RDMA_INSTANCES, copied into SDK v3's drivers), which lag new
instance types: ml.p5e.48xlarge was missing, so NCCL fell back to TCP sockets and jobs hung at
communicator start (sagemaker-training-toolkit#240). Here the answer follows the launch, whose
``efa`` / ``efa_rdma`` / ``gpus_per_host`` the plan took from smdist's dated catalogue:

- with EFA: FI_PROVIDER=efa, so libfabric (and the aws-ofi-nccl plugin) uses the adapter
  instead of TCP; NCCL_PROTO=simple, which the toolkit sets on every EFA instance because EFA
  delivers out of order;
- with RDMA read: FI_EFA_USE_DEVICE_RDMA=1 and RDMAV_FORK_SAFE=1, as the toolkit sets for its
  RDMA instances (libfabric aborts if RDMA is forced on an EFA without it);
- GPUs without EFA: NCCL_IB_DISABLE=1, so NCCL does not probe InfiniBand that is not there;
- NCCL_SOCKET_IFNAME: the interface SageMaker announces, so NCCL does not bind docker0 or lo;
  NCCL_DEBUG=WARN, so NCCL says why it fails;
- a CPU instance without EFA: nothing (no NCCL).

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

from .launch import Launch


def efa_environment(efa: bool, efa_rdma: bool, gpus: int) -> dict[str, str]:
    """The EFA / InfiniBand part: what an instance type's adapter asks for."""
    if efa:
        values = {"FI_PROVIDER": "efa", "NCCL_PROTO": "simple"}
        if efa_rdma:
            values.update({"FI_EFA_USE_DEVICE_RDMA": "1", "RDMAV_FORK_SAFE": "1"})
        return values
    return {"NCCL_IB_DISABLE": "1"} if gpus else {}


def fabric_environment(launch: Launch, interface: str | None = None) -> dict[str, str]:
    """Every NCCL / libfabric variable a host of ``launch`` gets (``interface``: the network
    interface its ranks talk over, when NCCL should be told)."""
    values = efa_environment(launch.efa, launch.efa_rdma, launch.gpus_per_host)
    if not values:
        return {}
    if interface:
        values["NCCL_SOCKET_IFNAME"] = interface
    values["NCCL_DEBUG"] = "WARN"
    return values
