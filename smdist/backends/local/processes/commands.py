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
  ``--oversubscribe``; it reaches the other hosts over ``ssh``: in namespaces, the hosts'
  sshd (``hosts.namespaced.sshd``, each worker host running nothing of its own, as
  SageMaker's workers wait); sharing this machine, the ssh stand-in
  (``hosts/shared/ssh_stand_in.py``); so every rank gets Open MPI's ``OMPI_COMM_WORLD_*``
  variables as on SageMaker;
- ``smdistributed.dataparallel``: ONE ``mpirun`` with the SMDataParallelRunner's options and
  exactly its exports (NCCL, EFA and ``SMDATAPARALLEL_*`` settings, no ``SM_*``), without
  ``smddprun`` (a SageMaker-only program).

The mpirun of both (its argv, its exports and the ssh stand-in) is ``mpirun``'s.

On a cluster of instance groups every group's hosts run: the runner (torchrun, mpirun) spans
the distribution groups' hosts only, a host of another group runs the program once, and each
host gets its group's resourceconfig.json and only the channels sent to its group.

Every command is an argv list. Values never pass through a shell: a program that is not a
Python script is executed directly (the container runs it through ``/bin/sh -c``), and the
ssh stand-in hands mpirun's own remote command line to the shell unedited.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.hosts.folders import EmulatedHost, host_config, write_config
from smdist.backends.local.preparation.layout import LocalLayout
from smdist.backends.local.preparation.setup import job_region
from smdist.backends.local.processes.environment import (
    NETWORK_INTERFACE,
    TOKEN_VARIABLE,
    clean_environment,
    host_environment,
)
from smdist.backends.local.processes.host_command import HostCommand, PreparedHosts
from smdist.backends.local.processes.mpirun import local_mpirun, map_host_directory
from smdist.contract.commands import (
    HostArguments,
    Image,
    Launch,
    Rendezvous,
    host_command,
)
from smdist.contract.groups import channels_for_group
from smdist.runtime.torchrun_command import WHEN_READY, when_ready_prefix

if TYPE_CHECKING:
    from smdist.backends.local.hosts.base import HostSet
    from smdist.backends.local.hosts.names import HostNames
    from smdist.planning.plan import Plan

MPI_TAGS = "mpirun"


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
    """The layout's launch on the emulated hosts: their names (every instance group's, in
    order), their network interface, and no EFA: the hosts share this machine, whatever the
    instance type (forced EFA settings make libfabric fail where it is absent)."""
    launch = layout.launch
    if not launch.instance_groups:  # the count may differ from the plan's (--hosts)
        return replace(launch, hosts=tuple(names), interface=interface, efa=False, efa_rdma=False)
    renamed = launch.renamed(dict(zip(launch.all_hosts, names, strict=True)))
    return replace(renamed, interface=interface, efa=False, efa_rdma=False)


def _script_arguments(env: Mapping[str, str]) -> list[str]:
    return list(json.loads(env["SM_USER_ARGS"]))


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
    host_set: HostSet,
) -> PreparedHosts:
    """Each host's config files and environment, then the commands that start the job, on
    hosts made ``host_set``'s way (its interface, ports and ssh)."""
    base = {**clean_environment(os.environ), TOKEN_VARIABLE: token}
    common = {"job_name": job_dir.name, "region": job_region(plan), "token": token,
              "base_environment": base, "cpus": os.cpu_count() or 1}  # fmt: skip
    settings = host_set.job_settings(common, layout, names, job_dir)
    interface = settings.interface
    launch = local_launch(layout, names.names, interface)
    seen = [host.seen for host in hosts]
    environments = []
    for host, view in zip(hosts, seen, strict=True):
        own = host_channels(plan, launch, host.name, channels)
        config = host_config(
            plan, layout, view, names.names, own, interface, launch.instance_groups
        )
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
        host_set=host_set,
    )
    return PreparedHosts(commands, environments)


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
    host_set: HostSet | None = None,
) -> list[HostCommand]:
    """Each host's command: one mpirun on the first host for an MPI launcher (reaching the
    other hosts through ``host_set``'s ssh), else one process per host (torchrun, the
    parameter-server host, or the program itself)."""
    image = local_image(python)
    commands = []
    if launch.launcher.uses_mpi:
        assert host_set is not None, "mpirun reaches the hosts through their ssh"
        ranked = [
            (h, e) for h, e in zip(hosts, environments, strict=True) if h.name in launch.hosts
        ]
        mpi_hosts, mpi_environments = [h for h, _ in ranked], [e for _, e in ranked]
        client = host_set.mpirun_client(mpi_hosts, mpi_environments, layout, bin_dir, python)
        commands.append(
            _mpirun_host_command(
                launch, layout, mpi_hosts, mpi_environments, image, program, client
            )
        )
    # A rendezvous even on one host (on a free port where hosts share this machine's network).
    first = Rendezvous((python, "-m", "torch.distributed.run"), master_port, always=True)
    for host, env in zip(hosts, environments, strict=True):
        if launch.launcher.uses_mpi and host.name in launch.hosts:
            continue  # mpirun on the first distribution host runs its ranks
        arguments = HostArguments(_script_arguments(env))
        meet = first
        if launch.node_rank(host.name):  # a distribution host after the first
            waiting = _torchrun_once_store_answers(python, host, launch.hosts[0], master_port)
            meet = replace(first, torchrun=waiting)
        argv = host_command(launch, host.index, image, program, arguments, torchrun=meet).argv
        assert argv is not None  # only an MPI launcher leaves a host without its own command
        commands.append(HostCommand(host, argv, env, host.code))
    return commands


def host_channels(
    plan: Plan, launch: Launch, host: str, channels: Mapping[str, str]
) -> dict[str, str]:
    """The channels (``channel -> S3DistributionType``) that reach ``host``: on a cluster of
    instance groups, those sent to its group or to every host."""
    if not launch.instance_groups:
        return dict(channels)
    group, inputs = launch.group_of(host), plan.spec.inputs
    routed = {name: list(getattr(inputs.get(name), "instance_groups", [])) for name in channels}
    return {name: channels[name] for name in channels_for_group(routed, group and group.name)}


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
    program: str,
    client: tuple[dict[str, str], Path],
) -> HostCommand:
    """The one mpirun, started on the first host, that runs every host's ranks, with its
    environment and ssh (``client``)."""
    names = [host.name for host in hosts]
    rank_hosts = [name for name in names for _ in range(layout.processes_per_host)]
    main_env, ssh = client
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
    "HostCommand",
    "PreparedHosts",
    "build_commands",
    "local_image",
    "local_launch",
    "local_mpirun",
    "map_host_directory",
    "prepare_commands",
]
