"""Each emulated host's process environment, and the files that hold it for the ssh stand-in.

The environment is the one the container gives the user's script, built by the container
contract (``smdist.contract.host``: the toolkit's ``SM_*`` variables, job name, MASTER_ADDR /
MASTER_PORT and NCCL defaults for PyTorch, TF_CONFIG for MultiWorkerMirroredStrategy) as the
host's processes see it: in namespaces of its own, ``/opt/ml``, ``eth0`` and SageMaker's fixed
ports; sharing this machine, its folder, loopback and ports of its own. Then what the emulation
itself needs (host-name resolution where hosts share the network, the host's share of the GPUs,
the job's process token, the hosts' ``ssh`` first on PATH).

It starts from smdist's own, minus variables that describe some other cluster (a stray
TF_CONFIG, RANK or SM_HOSTS in the shell would otherwise leak into every host).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.hosts.folders import NETWORK_INTERFACE, EmulatedHost
from smdist.backends.local.standins import SITE_DIR as STANDINS_DIR
from smdist.backends.safe_files import write_text_atomically
from smdist.contract.commands import HostPorts
from smdist.contract.environment import HostConfig, Machine
from smdist.contract.host import HostSite
from smdist.contract.host import host_environment as host_contract_environment
from smdist.contract.launch import Launch
from smdist.runtime.settings import LOCAL_JOB

if TYPE_CHECKING:
    from smdist.backends.local.preparation.layout import LocalLayout
    from smdist.planning.plan import Plan

TOKEN_VARIABLE = LOCAL_JOB  # the job's token; also tells its scripts they run locally
_FOREIGN_PREFIXES = (
    "SM_",
    "OMPI_",
    "PMIX_",
    "HOROVOD_",
    "TORCHELASTIC_",
    "NSS_WRAPPER_",
    "SMDIST_LOCAL_",
)
_FOREIGN_NAMES = frozenset(
    {
        "TF_CONFIG",
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TRAINING_JOB_NAME",
        "SAGEMAKER_JOB_NAME",
        "SAGEMAKER_BASE_DIR",
        "SAGEMAKER_REGION",
        "CURRENT_HOST",
        "SMDIST_TF_PORTS",
        "SMDIST_RDZV_PORT",
        "SMDIST_CHECKPOINT_DIR",
    }
)


def clean_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """smdist's environment without the variables of any other cluster or job."""
    return {
        name: value
        for name, value in environ.items()
        if not name.startswith(_FOREIGN_PREFIXES) and name not in _FOREIGN_NAMES
    }


@dataclass(frozen=True)
class JobSettings:
    """What every host's environment shares."""

    job_name: str
    region: str
    token: str
    master_port: int
    names_environment: dict[str, str]
    base_environment: dict[str, str]
    cpus: int
    # Each host's TF_CONFIG task and parameter server ports where hosts share one network;
    # None: SageMaker's fixed ones (each host has its own network).
    ports: HostPorts | None = None
    interface: str = NETWORK_INTERFACE
    tools: Path | None = None  # put first on PATH: the hosts' ssh


def host_environment(
    plan: Plan,
    launch: Launch,
    layout: LocalLayout,
    host: EmulatedHost,
    config: HostConfig,
    settings: JobSettings,
) -> dict[str, str]:
    """Everything the host's first process gets in its environment: the container contract's
    (``contract.host``) for ``launch`` (the layout's, on the emulated hosts' names) on ``host``
    as its processes see it, its interface and ports, then the emulation's own."""
    site = HostSite(
        base=host.base,
        interface=settings.interface,
        master_port=settings.master_port,
        ports=settings.ports,
    )
    environ = host_contract_environment(
        launch,
        host.index,
        config,
        Machine(num_cpus=settings.cpus, num_gpus=len(layout.host_gpus[host.index])),
        job_name=settings.job_name,
        framework=plan.framework,
        site=site,
        job_environment={**settings.base_environment, **layout.environment},
        region=settings.region,
    )
    environ.update(_job_variables(layout, host, settings, environ.get("PYTHONPATH", "")))
    environ.update(settings.names_environment)
    if settings.tools is not None:
        environ["PATH"] = f"{settings.tools}:{environ.get('PATH', '')}"
    if "NSS_WRAPPER_HOSTS" in settings.names_environment:
        # gethostname() answers the host's name, as in a SageMaker container. mpirun then treats
        # its own host as local and starts daemons on the other hosts only, as SageMaker's does.
        environ["NSS_WRAPPER_HOSTNAME"] = host.name
    if "OMP_NUM_THREADS" not in environ:
        # The hosts share this machine's cores: one thread pool each would oversubscribe them.
        environ["OMP_NUM_THREADS"] = str(max(1, settings.cpus // max(layout.world_size, 1)))
    return environ


def _job_variables(
    layout: LocalLayout, host: EmulatedHost, settings: JobSettings, python_path: str
) -> dict[str, str]:
    """What SageMaker, its training toolkit and the framework images set besides the contract's
    variables, then the emulation's own; ``python_path``: the PYTHONPATH so far."""
    # The stand-ins that answer SageMaker's library names (smdistributed.*, torch.sagemaker)
    # where the real libraries are absent, then the code, as SageMaker's toolkit puts it. The
    # stand-ins' directory holds only its sitecustomize (which runs the code's own, if the code
    # has one) and a private package, so being first hides nothing of the code's.
    paths = [str(STANDINS_DIR), str(host.code)]
    paths += [p for p in python_path.split(":") if p]
    return {
        "SAGEMAKER_BASE_DIR": str(host.base),
        "PYTHONPATH": ":".join(paths),
        # The emulation's own.
        TOKEN_VARIABLE: settings.token,
        "CUDA_VISIBLE_DEVICES": ",".join(layout.host_gpus[host.index]),
    }


def write_environment_files(
    directory: Path,
    hosts: list[EmulatedHost],
    environments: list[dict[str, str]],
    launching: dict[str, str],
) -> list[Path]:
    """Each host's own environment, for the ssh stand-in: what a login on that host starts with.

    On SageMaker a worker host writes its environment to ``/etc/environment`` before mpirun
    reaches it over ssh, so what mpirun does not export (``-x``) comes from the rank's own
    host. The stand-in runs with mpirun's environment (``launching``); the file holds the
    host's variable names and only the values that differ from mpirun's, which are smdist's
    own (host names, paths, GPUs). So a value of the user's (a token, a key) is never written:
    it is the same on every host, and reaches the login from memory.
    """
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for host, environment in zip(hosts, environments, strict=True):
        own = {name: value for name, value in environment.items() if launching.get(name) != value}
        path = directory / f"environment-{host.name}.json"
        write_text_atomically(path, json.dumps({"names": sorted(environment), "values": own}))
        paths.append(path)
    return paths
