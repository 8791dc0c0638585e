"""A pod's resource requests and limits on a HyperPod EKS node, from smdist's catalogue: one pod
per node, holding the node's accelerators and EFA interfaces and what the node leaves to pods
of its CPU and memory.

What a node leaves to pods is the HyperPod CLI's own reckoning (``sagemaker-hyperpod`` 3.12,
``training/quota_allocation_util.py``: ``_calculate_cpu_reservation`` and
``_calculate_memory_reservation``, kept for the kubelet, the system daemons and HyperPod's
agents), floored to whole cores and GiB as the CLI floors them; a pod asking for the whole
instance would never be scheduled. GPUs are ``nvidia.com/gpu``, Trainium chips
``aws.amazon.com/neurondevice``, EFA interfaces ``vpc.amazonaws.com/efa`` (the device plugins'
names, as the CLI writes them), each with its limit equal to its request.
"""

from __future__ import annotations

import math
from typing import Any

from smdist import catalog

GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neurondevice"
EFA = "vpc.amazonaws.com/efa"
ACCELERATOR_RESOURCES = {"gpu": GPU, "trainium": NEURON}
SOURCE = "sagemaker-hyperpod 3.12.0, training/quota_allocation_util.py (read 2026-11-29)"

# (share of each core, cores at that share): the rest 6% each, plus 0.1 core for everything
_CPU_STEPS = ((0.3, 1), (0.15, 1), (0.1, 2))
# (share of each GiB, GiB at that share): the rest 7% each, plus 0.5 GiB
_MEMORY_STEPS = ((0.3, 4), (0.25, 4), (0.2, 8), (0.17, 112))


def _reserved(amount: float, steps: tuple[tuple[float, int], ...], rest: float) -> float:
    reserved, left = 0.0, amount
    for share, size in steps:
        taken = min(size, max(left, 0))
        reserved += taken * share
        left -= taken
    return reserved + max(left, 0) * rest


def cpu_reservation(cpus: int) -> float:
    """Cores a node keeps from pods (the HyperPod CLI's reckoning)."""
    return 0.1 + _reserved(cpus, _CPU_STEPS, 0.06)


def memory_reservation(gib: float) -> float:
    """GiB a node keeps from pods (the HyperPod CLI's reckoning)."""
    return 0.5 + _reserved(gib, _MEMORY_STEPS, 0.07)


def allocatable(cpus: int, gib: float) -> tuple[int, int]:
    """(whole cores, whole GiB) a node of ``cpus`` cores and ``gib`` GiB leaves to its pod."""
    cores = math.floor(cpus - cpu_reservation(cpus))
    memory = math.floor(gib - memory_reservation(gib))
    return max(cores, 1), max(memory, 1)


def pod_resources(instance_type: str) -> dict[str, Any]:
    """``resources`` of the training container on ``instance_type`` (empty when the catalogue
    does not know it: the pod then asks for nothing the scheduler could count)."""
    info = catalog.instance(instance_type)
    if info is None:
        return {}
    cores, memory = allocatable(info.vcpus, info.memory_gib)
    requests: dict[str, str] = {"cpu": str(cores), "memory": f"{memory}Gi"}
    limits: dict[str, str] = {"memory": f"{memory}Gi"}
    devices = {}
    accelerator = ACCELERATOR_RESOURCES.get(info.accelerator)
    if accelerator is not None and info.accelerators:
        devices[accelerator] = str(info.accelerators)
    if info.efa and info.efa_interfaces:
        devices[EFA] = str(info.efa_interfaces)
    requests.update(devices)
    limits.update(devices)
    return {"requests": requests, "limits": limits}
