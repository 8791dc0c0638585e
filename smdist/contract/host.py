"""What a SageMaker host's command finds in its environment: built here, once, for every caller.

From the plan's ``Launch``, the host's index (among every instance group's hosts,
``Launch.all_hosts``) and its config files, the machine and where the host is (``HostSite``),
``host_environment`` returns the whole process environment the container gives the command,
layered as the container does:

1. what every container has (``container_variables``: unbuffered Python, no bytecode, the
   region), then the job's own variables (the spec's environment and smdist's ``SMDIST_*``);
2. the training toolkit's ``SM_*`` set (``environment``), and SageMaker's job variables
   (TRAINING_JOB_NAME, CURRENT_HOST);
3. the PyTorch container's settings for every job: MASTER_ADDR (the toolkit's master: the first
   host of the distribution's instance groups), MASTER_PORT (``TORCHRUN_PORT``) and NCCL's
   interface, InfiniBand and debug defaults, kept where the job set its own;
   under the torchrun runner, the EFA settings of the instance type (``fabric``);
4. on the distribution's hosts, the launcher's: TF_CONFIG for MultiWorkerMirroredStrategy
   (every host a worker on 8890), the parameter-server addresses where hosts share one machine
   (``commands.launcher_environment``).

Its callers add only what is theirs: ``smdist plan --hosts`` shows it with SageMaker's paths; the
local backend runs it on emulated hosts (their folders as ``base``, their own ports, its
emulation's variables); smdist's SDK v3 driver gives it to the ranks in the real container.

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .commands import HostPorts, launcher_environment
from .environment import (
    FRAMEWORK_MODULES,
    HostConfig,
    Machine,
    resource_config,
    sm_variables,
    training_environment,
)
from .fabric import fabric_environment
from .launch import Launch, Launcher
from .program import TORCHRUN_PORT

CONTAINER_BASE = Path("/opt/ml")
CONTAINER_INTERFACE = "eth0"  # resourceconfig.json's network_interface_name on SageMaker


@dataclass(frozen=True)
class HostSite:
    """Where a host is: SageMaker's container (the defaults), or an emulation's host, with its
    own folder for ``/opt/ml``, its interface and, where hosts share one machine, its ports."""

    base: Path = CONTAINER_BASE
    interface: str = CONTAINER_INTERFACE
    master_port: int = TORCHRUN_PORT  # the PyTorch container's MASTER_PORT
    ports: HostPorts | None = None  # TF_CONFIG task / parameter server ports, when not fixed


def framework_defaults(
    launch: Launch, framework: str, site: HostSite, distributes: bool = True
) -> dict[str, str]:
    """What the framework container and its runner set for NCCL, where the job did not;
    ``distributes``: the host starts the runner (a host of another group runs the program)."""
    if framework != "pytorch":
        return {}
    defaults = {"NCCL_SOCKET_IFNAME": site.interface, "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "WARN"}
    if launch.launcher is Launcher.TORCHRUN and distributes:  # the runner's EFA settings
        fabric = fabric_environment(launch, site.interface)
        defaults.update({k: v for k, v in fabric.items() if k.startswith(("FI_", "RDMAV_"))})
        if launch.efa:
            defaults["NCCL_PROTO"] = "simple"
    return defaults


def container_variables(region: str | None) -> dict[str, str]:
    """What SageMaker and the Deep Learning Containers' images set in every container, under
    the job's own variables (a job may set its own)."""
    variables = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if region:
        variables["SAGEMAKER_REGION"] = region
    return variables


def host_environment(
    launch: Launch,
    index: int,
    config: HostConfig,
    machine: Machine,
    *,
    job_name: str,
    framework: str,
    site: HostSite = HostSite(),  # noqa: B008 - frozen, never changed
    job_environment: Mapping[str, str] = {},  # noqa: B006 - read only
    region: str | None = None,
) -> dict[str, str]:
    """The environment host ``index`` of ``launch`` (of ``launch.all_hosts``: every group's)
    starts its command with (see the module)."""
    host = launch.all_hosts[index]
    rank = launch.node_rank(host)  # None: a host of a group that runs the program once
    training_env = training_environment(
        site.base, config, machine, job_name=job_name,
        framework_module=FRAMEWORK_MODULES.get(framework),
    )  # fmt: skip
    environment = {**container_variables(region), **job_environment}
    environment.update(sm_variables(training_env))
    environment.update(
        {
            "TRAINING_JOB_NAME": job_name,
            "SAGEMAKER_JOB_NAME": job_name,
            "CURRENT_HOST": host,
        }
    )
    if framework == "pytorch":  # on every host: the first distribution host
        master = training_env["master_hostname"]
        environment.update({"MASTER_ADDR": master, "MASTER_PORT": str(site.master_port)})
    for name, value in framework_defaults(launch, framework, site, rank is not None).items():
        environment.setdefault(name, value)
    if rank is not None:
        environment.update(launcher_environment(launch.launcher, launch.hosts, rank, site.ports))
    return environment


def host_resource_config(launch: Launch, host: str, interface: str) -> dict[str, Any]:
    """``resourceconfig.json`` of ``host`` of ``launch``: its group's type and name, every group
    (one ``homogeneousCluster`` of ``launch.instance_type`` without groups)."""
    hosts = list(launch.all_hosts)
    return resource_config(hosts, host, launch.instance_type, interface, launch.instance_groups)
