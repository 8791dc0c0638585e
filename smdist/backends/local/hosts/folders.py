"""Emulated SageMaker hosts: a directory that is the host's ``/opt/ml``, and its config files.

In its own namespaces a host's processes see the directory at ``/opt/ml`` itself; sharing this
machine, they see it where it is. ``EmulatedHost.base`` is where smdist writes and reads it,
``seen`` the host as its processes see it (what its environment and config files name).

Each host gets ``input/config/{hyperparameters,resourceconfig,inputdataconfig}.json``,
``input/data/<channel>/``, ``model/``, ``output/data/``, ``checkpoints/`` and ``code/``. Its
process environment is ``environment``'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.preparation.layout import LocalLayout
from smdist.contract.environment import HostConfig, input_data_config, resource_config
from smdist.contract.groups import HostGroup

if TYPE_CHECKING:
    from smdist.backends.local.hosts.shared.names import HostNames
    from smdist.planning.plan import Plan

NETWORK_INTERFACE = "lo"  # what the emulated hosts share here: loopback


@dataclass(frozen=True)
class EmulatedHost:
    name: str
    index: int
    address: str
    base: Path  # the host's /opt/ml, as smdist reaches it
    checkpoint_path: str = "checkpoints"  # checkpoint.local_path, relative to /opt/ml
    inside: Path | None = None  # where the host's processes see ``base``, if elsewhere

    @property
    def seen(self) -> EmulatedHost:
        """This host as its processes see it: paths under what is /opt/ml for them."""
        return self if self.inside is None else replace(self, base=self.inside, inside=None)

    @property
    def code(self) -> Path:
        return self.base / "code"

    @property
    def config_dir(self) -> Path:
        return self.base / "input" / "config"

    @property
    def data_dir(self) -> Path:
        return self.base / "input" / "data"

    @property
    def model(self) -> Path:
        return self.base / "model"

    @property
    def output(self) -> Path:
        return self.base / "output"

    @property
    def output_data(self) -> Path:
        return self.base / "output" / "data"

    @property
    def checkpoints(self) -> Path:
        return self.base / self.checkpoint_path

    @property
    def failure_file(self) -> Path:
        return self.base / "output" / "failure"

    def create(self, channels: list[str]) -> None:
        for folder in (self.code, self.config_dir, self.model, self.output_data, self.checkpoints):
            folder.mkdir(parents=True, exist_ok=True)
        for channel in channels:
            (self.data_dir / channel).mkdir(parents=True, exist_ok=True)


def make_hosts(
    job_dir: Path,
    names: HostNames,
    checkpoint_path: str = "checkpoints",
    inside: Path | None = None,
) -> list[EmulatedHost]:
    """The job's hosts, each with its folder under ``job_dir``; ``inside``: where their
    processes see that folder (``/opt/ml`` in namespaces of their own)."""
    return [
        EmulatedHost(name, index, address, job_dir / "hosts" / name, checkpoint_path, inside)
        for index, (name, address) in enumerate(zip(names.names, names.addresses, strict=True))
    ]


def host_hyperparameters(layout: LocalLayout, host: EmulatedHost) -> dict[str, str]:
    """The job's wire hyperparameters with the values that name this host's files."""
    wire = dict(layout.wire_hyperparameters)
    wire["sagemaker_submit_directory"] = json.dumps(host.code.as_uri())
    if "model_dir" in wire:  # TensorFlow: local mode points it at the model directory
        wire["model_dir"] = json.dumps(str(host.model))
    return wire


def write_config(host: EmulatedHost, config: HostConfig) -> None:
    files = {
        "hyperparameters.json": config.hyperparameters,
        "resourceconfig.json": config.resource_config,
        "inputdataconfig.json": config.input_data_config,
    }
    for name, content in files.items():
        (host.config_dir / name).write_text(json.dumps(content, indent=1))


def host_config(
    plan: Plan,
    layout: LocalLayout,
    host: EmulatedHost,
    hosts: list[str],
    channels: Mapping[str, str],
    interface: str = NETWORK_INTERFACE,
    groups: Sequence[HostGroup] = (),
) -> HostConfig:
    """``host`` as its processes see it (``seen``); ``interface``: its network's; ``groups``:
    the cluster's instance groups on the emulated hosts' names; ``channels``: the host's."""
    return HostConfig(
        hyperparameters=host_hyperparameters(layout, host),
        resource_config=resource_config(
            hosts, host.name, plan.spec.cluster.instance_type, interface, groups
        ),
        input_data_config=input_data_config(channels),
    )


def hosts_mapping(
    hosts: list[EmulatedHost], gpus: list[list[str]], environment_files: list[Path]
) -> str:
    """host -> its /opt/ml directory, GPUs and environment file, for the ssh stand-in."""
    return json.dumps(
        {
            host.name: {
                "base": str(host.base),
                "gpus": ",".join(gpus[host.index]),
                "environment": str(environment_files[host.index]),
            }
            for host in hosts
        }
    )


__all__ = [
    "NETWORK_INTERFACE",
    "EmulatedHost",
    "host_config",
    "host_hyperparameters",
    "hosts_mapping",
    "make_hosts",
    "write_config",
]
