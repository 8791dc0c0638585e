"""The environment every pod of a HyperPodPyTorchJob starts with: the SageMaker contract's, from
its one builder (``smdist.contract.host``), less what differs from host to host.

The pods are alike: the operator gives each its node rank only when it starts, through
``hyperpodrun``, which sets every worker's RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT. So the pod template carries the contract's variables that are the same on every
host and name none (``SM_MODEL_DIR``, ``SM_CHANNEL_<NAME>``, ``SM_HPS``, ``SM_HP_<NAME>``,
``SM_USER_ARGS``, ``SM_NUM_GPUS``, the job's own variables, NCCL's and EFA's), and leaves out the
host names SageMaker gives its hosts (``SM_HOSTS``, ``SM_CURRENT_HOST``, ``SM_TRAINING_ENV``,
``SM_RESOURCE_CONFIG``), which name no pod here. The paths are the container's: the pod
template mounts the job's folders at ``/opt/ml`` as SageMaker lays them out.

hyperpodrun itself reads ``NNODES`` (its rendezvous, hyperpod-elastic-agent 1.1.3
``rendezvous/hyperpod_rendezvous_backend.py``), which the pod sets too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from smdist import catalog
from smdist.contract.environment import HostConfig, Machine, input_data_config
from smdist.contract.fabric import fabric_environment
from smdist.contract.host import (
    CONTAINER_BASE,
    CONTAINER_INTERFACE,
    host_environment,
    host_resource_config,
)
from smdist.runtime.paths import CHECKPOINT_DIR_ENV

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

NODES_VARIABLE = "NNODES"
CHECKPOINTS = str(CONTAINER_BASE / "checkpoints")
# Set for each worker by hyperpodrun, from what the operator posts to it.
_WORKER_NAMES = frozenset(("MASTER_ADDR", "MASTER_PORT"))


def _host_environment(
    plan: Plan, index: int, hyperparameters: Mapping[str, str], job_name: str, region: str
) -> dict[str, str]:
    launch = plan.launch
    host = launch.all_hosts[index]
    channels = {name: source.distribution for name, source in plan.spec.inputs.items()}
    config = HostConfig(
        hyperparameters=dict(hyperparameters),
        resource_config=host_resource_config(launch, host, CONTAINER_INTERFACE),
        input_data_config=input_data_config(channels),
    )
    info = catalog.instance(launch.instance_type)
    machine = Machine(num_cpus=info.vcpus if info else 1, num_gpus=launch.gpus_per_host)
    job_environment = {**plan.environment, CHECKPOINT_DIR_ENV: CHECKPOINTS}
    return host_environment(
        launch, index, config, machine, job_name=job_name, framework=plan.framework,
        job_environment=job_environment, region=region,
    )  # fmt: skip


def pod_environment(
    plan: Plan, hyperparameters: Mapping[str, str], *, job_name: str, region: str, script: str
) -> dict[str, str]:
    """The variables of every pod of ``plan`` run as ``job_name`` (``hyperparameters``: the
    wire form, as SageMaker's request carries them; ``script``: what hyperpodrun starts)."""
    launch = plan.launch
    hosts = launch.all_hosts
    each = [
        _host_environment(plan, index, hyperparameters, job_name, region)
        for index in range(len(hosts))
    ]
    shared = {
        name: value
        for name, value in each[0].items()
        if name not in _WORKER_NAMES
        and all(other.get(name) == value for other in each[1:])
        and not any(host in value for host in hosts)
    }
    for name, value in fabric_environment(launch, CONTAINER_INTERFACE).items():
        shared.setdefault(name, value)
    shared[NODES_VARIABLE] = str(len(launch.hosts))
    # The contract names the program a training job's container starts (smdist's launcher
    # for the torchrun launch); here hyperpodrun starts the training script itself.
    shared["SM_USER_ENTRY_POINT"] = script
    shared["SM_MODULE_NAME"] = script.removesuffix(".py")
    return dict(sorted(shared.items()))
