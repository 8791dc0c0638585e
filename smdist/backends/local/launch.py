"""The command each emulated host runs, per distribution, as the SageMaker container runs it.

The commands come from ``smdist.contract.commands``, the builder SageMaker's side uses too,
for the plan's launch on the emulated hosts; this module adds only what the emulation needs.

- no distribution (incl. smdist's torchrun launcher, which starts torchrun itself) and
  MultiWorkerMirroredStrategy: the program as a plain process on every host,
  ``python -- <program> --name value ...``;
- ``torch_distributed`` (DDP's SageMaker launcher, SMP v2): ``torchrun`` on every host with
  a static rendezvous on the first host (a free port instead of the container's ``TORCHRUN_PORT``);
- ``mpi`` (Horovod, SMP v1): ONE ``mpirun`` on the first host spanning all hosts, with the
  MPIRunner's options (``--tag-output``, ``-x`` of every ``SM_*`` variable, ...), plus
  ``--oversubscribe``; it reaches the other hosts over ``ssh``: in namespaces, the hosts' sshd
  (``hostns.sshd``, each worker host running nothing of its own, as SageMaker's workers wait);
  sharing this machine, the ssh stand-in (``ssh_stand_in.py``); so every rank gets Open MPI's
  ``OMPI_COMM_WORLD_*`` variables as on SageMaker;
- ``smdistributed.dataparallel``: ONE ``mpirun`` with the SMDataParallelRunner's options and
  exactly its exports (NCCL, EFA and ``SMDATAPARALLEL_*`` settings, no ``SM_*``), without
  ``smddprun`` (a SageMaker-only program).

The mpirun of both (its argv, its exports and the ssh stand-in) is ``mpirun``'s.

Every command is an argv list. Values never pass through a shell: a program that is not a
Python script is executed directly (the container runs it through ``/bin/sh -c``), and the
ssh stand-in hands mpirun's own remote command line to the shell unedited.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.environment import (
    NETWORK_INTERFACE,
    TOKEN_VARIABLE,
    JobSettings,
    clean_environment,
    host_environment,
)
from smdist.backends.local.hosts import EmulatedHost, host_config, write_config
from smdist.backends.local.layout import LocalLayout
from smdist.backends.local.mpirun import (
    SSH_STAND_IN,
    launching_environment,
    local_mpirun,
    map_host_directory,
    write_ssh_stand_in,
)
from smdist.backends.local.network import free_ports
from smdist.backends.local.setup import job_region
from smdist.contract.commands import (
    HostArguments,
    HostPorts,
    Image,
    Launch,
    Rendezvous,
    host_command,
)
from smdist.contract.host import CONTAINER_INTERFACE as CONTAINER_NIC
from smdist.contract.host import TORCHRUN_PORT
from smdist.runtime.torchrun_command import WHEN_READY, when_ready_prefix

if TYPE_CHECKING:
    from smdist.backends.local.network import HostNames
    from smdist.planning.plan import Plan

MPI_TAGS = "mpirun"


@dataclass(frozen=True)
class HostCommand:
    """One process to start as an emulated host's first process."""

    host: EmulatedHost
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    tags: str | None = None  # output lines carry rank tags of this launcher
    rank_hosts: list[str] = field(default_factory=list)  # global rank -> host name


def local_image(python: str) -> Image:
    """What this machine gives the command: its Python; no mpi4py (rarely installed here; a
    rank that raises still ends the job through orte_abort_on_non_zero_status), no smddprun or
    smddpmprun, no host-name shim (the emulated hosts have their own names); a program that is
    not a Python script is executed directly, its arguments exactly as given."""
    return Image(
        python=python, mpi4py=False, smddprun=False, smddpmprun=False, hostname_shim=None,
        shell_programs=False,
    )  # fmt: skip


def local_launch(
    layout: LocalLayout, names: list[str], interface: str = NETWORK_INTERFACE
) -> Launch:
    """The layout's launch on the emulated hosts: their names, their network interface, and no
    EFA: the hosts share this machine, whatever the instance type (forced EFA settings make
    libfabric fail where it is absent)."""
    return replace(
        layout.launch,
        hosts=tuple(names),
        interface=interface,
        efa=False,
        efa_rdma=False,
    )


def _script_arguments(env: Mapping[str, str]) -> list[str]:
    return list(json.loads(env["SM_USER_ARGS"]))


@dataclass(frozen=True)
class PreparedHosts:
    """Each host's environment and the commands that start the job (an MPI job's worker hosts
    have an environment but no command: mpirun reaches them)."""

    commands: list[HostCommand]
    environments: list[dict[str, str]]

    def idle(self) -> list[tuple[int, dict[str, str]]]:
        started = {command.host.index for command in self.commands}
        return [(i, env) for i, env in enumerate(self.environments) if i not in started]


def prepare_commands(
    plan: Plan,
    layout: LocalLayout,
    hosts: list[EmulatedHost],
    names: HostNames,
    channels: Mapping[str, str],
    *,
    job_dir: Path,
    token: str,
    python: str,
    tools: Path | None = None,
) -> PreparedHosts:
    """Each host's config files and environment, then the commands that start the job.
    ``tools``: the hosts are in namespaces of their own, with this folder's ``ssh``."""
    settings = _job_settings(plan, layout, names, job_dir, token, tools)
    interface = settings.interface
    launch = local_launch(layout, names.names, interface)
    seen = [host.seen for host in hosts]
    environments = []
    for host, view in zip(hosts, seen, strict=True):
        config = host_config(plan, layout, view, names.names, channels, interface)
        write_config(host, config)
        environments.append(host_environment(plan, launch, layout, view, config, settings))
    commands = build_commands(
        launch,
        layout,
        seen,
        environments,
        program=plan.program,
        python=python,
        master_port=settings.master_port,
        bin_dir=job_dir / "bin",
        ssh=tools / "ssh" if tools else None,
    )
    return PreparedHosts(commands, environments)


def _job_settings(
    plan: Plan,
    layout: LocalLayout,
    names: HostNames,
    job_dir: Path,
    token: str,
    tools: Path | None,
) -> JobSettings:
    """What every host's environment shares. Hosts in namespaces of their own have SageMaker's
    interface and fixed ports; hosts sharing this machine get free ports of their own."""
    base = {**clean_environment(os.environ), TOKEN_VARIABLE: token}
    common = {"job_name": job_dir.name, "region": job_region(plan), "token": token,
              "base_environment": base, "cpus": os.cpu_count() or 1}  # fmt: skip
    if tools is not None:
        return JobSettings(
            **common, master_port=TORCHRUN_PORT, names_environment={}, interface=CONTAINER_NIC,
            tools=tools,
        )  # fmt: skip
    ports = free_ports(1 + 2 * layout.hosts)
    hosts_file = job_dir / "nss_hosts"
    hosts_file.write_text(names.hosts_file_text())
    return JobSettings(
        **common,
        master_port=ports[0],
        names_environment=names.environment(hosts_file),
        # Every worker and server binds 0.0.0.0:<port>: each host gets its own ports.
        ports=HostPorts(ports[1 : 1 + layout.hosts], ports[1 + layout.hosts :]),
    )


def build_commands(
    launch: Launch,
    layout: LocalLayout,
    hosts: list[EmulatedHost],
    environments: list[dict[str, str]],
    *,
    program: str,
    python: str,
    master_port: int,
    bin_dir: Path,
    ssh: Path | None = None,
) -> list[HostCommand]:
    """Each host's command: one mpirun on the first host for an MPI launcher, else one
    process per host (torchrun, the parameter-server host, or the program itself). ``ssh``:
    the hosts' own ssh client (hosts in namespaces), else the stand-in is written."""
    image = local_image(python)
    if launch.launcher.uses_mpi:
        mpirun = _mpirun_host_command(
            launch, layout, hosts, environments, image, bin_dir, program, ssh
        )
        return [mpirun]
    # A rendezvous even on one host (on a free port where hosts share this machine's network).
    first = Rendezvous((python, "-m", "torch.distributed.run"), master_port, always=True)
    commands = []
    for host, env in zip(hosts, environments, strict=True):
        arguments = HostArguments(_script_arguments(env))
        meet = first
        if host.index > 0:
            waiting = _torchrun_once_store_answers(python, host, launch.hosts[0], master_port)
            meet = replace(first, torchrun=waiting)
        argv = host_command(launch, host.index, image, program, arguments, torchrun=meet).argv
        assert argv is not None  # only an MPI launcher leaves a host without its own command
        commands.append(HostCommand(host, argv, env, host.code))
    return commands


def _torchrun_once_store_answers(
    python: str, host: EmulatedHost, first_host: str, port: int
) -> tuple[str, ...]:
    """How torchrun starts on a host after the first: through the host's copy of the
    runtime's ``torchrun_when_ready.py``, which imports torch, waits until the first host's
    store answers, then runs torchrun with the same arguments (its output, signals and exit
    code). A torchrun that reached the store before it was served would back off 250-750 ms
    on about half of all starts, as smdist's own launcher avoids on SageMaker too."""
    helper = host.code / "smdist" / "runtime" / WHEN_READY.name
    return tuple(when_ready_prefix(python, first_host, port, helper))


def _mpirun_host_command(
    launch: Launch,
    layout: LocalLayout,
    hosts: list[EmulatedHost],
    environments: list[dict[str, str]],
    image: Image,
    bin_dir: Path,
    program: str,
    ssh: Path | None,
) -> HostCommand:
    """The one mpirun, started on the first host, that runs every host's ranks: through the
    hosts' ``ssh`` when given (each host's own environment is its sshd's), else through the
    stand-in, which reads every host's environment from a file."""
    names = [host.name for host in hosts]
    rank_hosts = [name for name in names for _ in range(layout.processes_per_host)]
    if ssh is not None:
        main_env = {
            **environments[0],
            "LD_LIBRARY_PATH": environments[0].get("LD_LIBRARY_PATH", ""),
        }
    else:
        main_env, ssh = launching_environment(
            hosts, environments, layout.host_gpus, bin_dir, image.python
        )
    argv = local_mpirun(
        launch,
        image,
        hosts,
        main_env,
        [_script_arguments(env) for env in environments],
        program=program,
        ssh=ssh,
        host_gpus=layout.host_gpus,
    )
    return HostCommand(hosts[0], argv, main_env, hosts[0].code, MPI_TAGS, rank_hosts)


__all__ = [
    "MPI_TAGS",
    "SSH_STAND_IN",
    "HostCommand",
    "PreparedHosts",
    "build_commands",
    "local_image",
    "local_launch",
    "local_mpirun",
    "map_host_directory",
    "prepare_commands",
    "write_ssh_stand_in",
]
