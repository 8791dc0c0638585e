"""Channels sent to instance groups (``inputs.<channel>.instance_groups``): on SageMaker such a
channel reaches the hosts of those groups only (``S3DataSource.InstanceGroupNames``); the other
hosts have no folder, no ``SM_CHANNEL_<NAME>`` and no entry in ``inputdataconfig.json`` for it.

Each set of channels that reaches the same hosts is staged on those hosts alone, the way
``channels.stage_channels`` stages every channel (a ``ShardedByS3Key`` channel is shared out
among the hosts that get it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.data.channels import ChannelView, stage_channels

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.spec.job import Input


def channel_hosts(source: Input, host_groups: Sequence[str | None]) -> tuple[int, ...]:
    """The indices of the hosts a channel reaches, of hosts in the groups ``host_groups``."""
    wanted = source.instance_groups
    return tuple(i for i, group in enumerate(host_groups) if not wanted or group in wanted)


def stage_channels_on_groups(
    inputs: Mapping[str, Input],
    hosts: list[EmulatedHost],
    host_groups: Sequence[str | None],
    download_dir: Path,
    in_place: bool,
    stage: Callable[..., tuple[dict[str, str], list[ChannelView]]] = stage_channels,
) -> tuple[dict[str, str], list[ChannelView]]:
    """``stage`` (``stage_channels``) where a channel reaches the hosts of its instance groups
    only; ``host_groups``: each host's group. Returns channel -> S3DistributionType, and the
    views the hosts make as they start."""
    if not any(source.instance_groups for source in inputs.values()):
        return stage(inputs, hosts, download_dir, in_place)
    sets: dict[tuple[int, ...], dict[str, Input]] = {}
    for name, source in inputs.items():
        sets.setdefault(channel_hosts(source, host_groups), {})[name] = source
    distributions: dict[str, str] = {}
    views: list[ChannelView] = []
    for chosen, channels in sets.items():
        # Numbered among the hosts that get them: a host's share of a sharded channel.
        subset = [replace(hosts[index], index=position) for position, index in enumerate(chosen)]
        staged, shown = stage(channels, subset, download_dir, in_place)
        distributions.update(staged)
        views += [replace(view, host=chosen[view.host]) for view in shown]
    return {name: distributions[name] for name in inputs if name in distributions}, views
