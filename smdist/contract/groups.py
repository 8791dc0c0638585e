"""Heterogeneous clusters: a job's instance groups as SageMaker's hosts see them.

What SageMaker and its training toolkit do with instance groups (sagemaker-training 5.x,
``sagemaker_training.environment``; the PyTorch container's ``training``):

- every host of every group is one of ``algo-1`` .. ``algo-N``, ``N`` the job's hosts in all
  groups; each host's ``resourceconfig.json`` names all of them (``hosts``), the host's own
  group (``current_group_name``) and type (``current_instance_type``, the group's), and every
  group with its type and hosts (``instance_groups``). Without groups SageMaker writes one
  group, ``homogeneousCluster``;
- the groups that run the distributed program are the hyperparameter
  ``sagemaker_distribution_instance_groups``, else the host's own group when a distribution
  flag is set (``sagemaker_torch_distributed_enabled``, ...), else none. Their hosts are the
  distribution hosts; the first is the master (``master_hostname``: MASTER_ADDR under PyTorch),
  and with none, the first host;
- a host in a distribution group starts the strategy's runner (torchrun, mpirun) across the
  distribution hosts; a host of any other group runs the program once, as a plain process;
- a channel with ``InstanceGroupNames`` reaches the hosts of those groups only (API reference,
  ``S3DataSource.InstanceGroupNames``: "the instance groups that get data from the S3 data
  source").

Which group's hosts get the low numbers SageMaker does not promise (AWS's examples show both
orders); here the groups take them in the order the request lists them, and a script finds its
group's hosts in ``resourceconfig.json`` (``SM_INSTANCE_GROUPS_DICT``), never by number.

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HOMOGENEOUS_GROUP = "homogeneousCluster"  # the one group SageMaker writes without groups
DISTRIBUTION_GROUPS = "sagemaker_distribution_instance_groups"
# Flags that put the host's own group into the distribution groups (the toolkit's list).
DISTRIBUTION_FLAGS = (
    "sagemaker_mpi_enabled",
    "sagemaker_parameter_server_enabled",
    "sagemaker_distributed_dataparallel_enabled",
    "sagemaker_pytorch_ddp_enabled",
    "sagemaker_pytorch_xla_multi_worker_enabled",
    "sagemaker_multi_worker_mirrored_strategy_enabled",
    "sagemaker_torch_distributed_enabled",
)


@dataclass(frozen=True)
class HostGroup:
    """One instance group: its name, instance type (and that type's GPUs) and hosts."""

    name: str
    instance_type: str
    hosts: tuple[str, ...]
    gpus_per_host: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "hosts", tuple(self.hosts))

    @classmethod
    def of(cls, value: HostGroup | Mapping[str, Any]) -> HostGroup:
        """A group, or one read back from ``Launch.to_dict``'s JSON."""
        return value if isinstance(value, HostGroup) else cls(**value)

    def to_resource_entry(self) -> dict[str, Any]:
        """The group as ``resourceconfig.json``'s ``instance_groups`` lists it."""
        return {
            "instance_group_name": self.name,
            "instance_type": self.instance_type,
            "hosts": list(self.hosts),
        }


def name_hosts(groups: Sequence[tuple[str, str, int, int]]) -> tuple[HostGroup, ...]:
    """Groups of ``(name, instance_type, count, gpus_per_host)`` with their hosts named as
    SageMaker names them: ``algo-1`` .. ``algo-N`` over the whole cluster, in the groups'
    order."""
    named, first = [], 1
    for name, instance_type, count, gpus in groups:
        hosts = tuple(f"algo-{number}" for number in range(first, first + count))
        named.append(HostGroup(name, instance_type, hosts, gpus))
        first += count
    return tuple(named)


def group_of(groups: Sequence[HostGroup], host: str) -> HostGroup | None:
    """The group ``host`` belongs to; None for a host of no group (or without groups)."""
    return next((group for group in groups if host in group.hosts), None)


def group_resource_config(
    groups: Sequence[HostGroup], current_host: str, network_interface: str
) -> dict[str, Any]:
    """``resourceconfig.json`` of ``current_host`` on a cluster of ``groups``."""
    group = group_of(groups, current_host)
    if group is None:
        raise ValueError(f"{current_host!r} is a host of none of the groups {list(groups)}")
    return {
        "current_host": current_host,
        "current_instance_type": group.instance_type,
        "current_group_name": group.name,
        "hosts": [host for entry in groups for host in entry.hosts],
        "instance_groups": [entry.to_resource_entry() for entry in groups],
        "network_interface_name": network_interface,
    }


def toolkit_instance_groups(
    resources: Mapping[str, Any], framework_params: Mapping[str, Any]
) -> dict[str, Any]:
    """The toolkit's instance-group entries of a host's training environment: its group, the
    distribution's groups and hosts, and the master (the first distribution host)."""
    hosts = list(resources["hosts"])
    group = resources.get("current_group_name", HOMOGENEOUS_GROUP)
    groups = resources.get("instance_groups", [])
    distributed = any(framework_params.get(flag, False) for flag in DISTRIBUTION_FLAGS)
    distribution_groups = framework_params.get(DISTRIBUTION_GROUPS, [group] if distributed else [])
    distribution_hosts: list[str] = []
    for entry in groups:
        if entry["instance_group_name"] in distribution_groups:
            distribution_hosts.extend(entry["hosts"])
    if not groups:  # SageMaker local mode: no groups written, every host distributes
        distribution_hosts = list(hosts)
    return {
        "current_instance_group": group,
        "current_instance_group_hosts": next(
            (entry["hosts"] for entry in groups if entry["instance_group_name"] == group), []
        ),
        "distribution_hosts": distribution_hosts,
        "distribution_instance_groups": distribution_groups,
        "instance_groups": [entry["instance_group_name"] for entry in groups],
        "instance_groups_dict": {entry["instance_group_name"]: entry for entry in groups},
        "is_hetero": len(groups) > 1,
        "master_hostname": distribution_hosts[0] if distribution_hosts else hosts[0],
    }


def rank_hosts(resources: Mapping[str, Any], distribution_groups: Sequence[str]) -> list[str]:
    """The hosts that take part in the distributed program: the hosts of
    ``distribution_groups`` (as ``resources``, a ``resourceconfig.json``, names them), or every
    host where no group is named or the config lists none of them."""
    chosen = [
        host
        for entry in resources.get("instance_groups", [])
        if entry["instance_group_name"] in distribution_groups
        for host in entry["hosts"]
    ]
    return chosen or list(resources["hosts"])


def channels_for_group(channel_groups: Mapping[str, Sequence[str]], group: str | None) -> list[str]:
    """The channels a host of ``group`` gets, of ``channel -> the groups it goes to`` (none:
    every host)."""
    return [
        channel
        for channel, groups in channel_groups.items()
        if not groups or (group is not None and group in groups)
    ]
