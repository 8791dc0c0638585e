"""A cluster of instance groups on this machine: every group's hosts emulated, this machine's
GPUs shared out to the hosts of the groups whose instance type has GPUs."""

from __future__ import annotations

from smdist.contract.launch import Launch
from smdist.errors import Problem, SpecError


def groups_text(launch: Launch) -> str:
    """Each group's hosts and type, and whether it runs the distributed program."""
    return "; ".join(
        f"{group.name}: {', '.join(group.hosts)} ({group.instance_type}, "
        f"{'distributed' if group.name in launch.distribution_groups else 'the script once'})"
        for group in launch.instance_groups
    )


def group_host_count(launch: Launch, hosts: int | None, notes: list[str]) -> int:
    """Every group's hosts: ``hosts`` (``--hosts``) cannot change them."""
    total = len(launch.all_hosts)
    if hosts not in (None, total):
        raise SpecError(
            [
                Problem(
                    "hosts",
                    f"a cluster of instance groups runs every group's hosts: {groups_text(launch)}",
                    hosts,
                    f"{total}, or leave hosts out",
                )
            ]
        )
    notes.append(f"instance groups: {groups_text(launch)}")
    return total


def host_gpus_of(launch: Launch, hosts: int, gpus: list[str]) -> tuple[int, list[list[str]]]:
    """This machine's ``gpus`` shared out to ``hosts`` emulated hosts: (each GPU host's share,
    each host's GPU ids). With instance groups only the hosts of a type with GPUs get one."""
    wanted = [True] * hosts
    if launch.instance_groups:
        groups = [launch.group_of(host) for host in launch.all_hosts]
        wanted = [bool(group and group.gpus_per_host) for group in groups]
    share = len(gpus) // max(sum(wanted), 1)
    given, host_gpus = 0, []
    for takes in wanted:
        host_gpus.append(gpus[given : given + share] if takes else [])
        given += share if takes else 0
    return share, host_gpus
