"""The command each emulated host runs, per distribution, as the SageMaker container runs it.

The commands come from ``smdist.contract.commands``, the builder SageMaker's side uses too,
for the plan's launch on the emulated hosts; this module adds only what the emulation needs.

- no distribution (incl. smdist's torchrun launcher, which starts torchrun itself) and
  MultiWorkerMirroredStrategy: the program as a plain process on every host,
  ``python -- <program> --name value ...``;
- ``torch_distributed`` (DDP's SageMaker launcher, SMP v2): ``torchrun`` on every host with
  a static rendezvous on the first host (a free port instead of the container's 7777);
- ``mpi`` (Horovod, SMP v1): ONE ``mpirun`` on the first host spanning all hosts, with the
  MPIRunner's options (``--tag-output``, ``-x`` of every ``SM_*`` variable, ...), plus
  ``--oversubscribe``; it reaches the other hosts through the ssh stand-in (``ssh_stand_in.py``),
  so every rank gets Open MPI's ``OMPI_COMM_WORLD_*`` variables as on SageMaker;
- ``smdistributed.dataparallel``: ONE ``mpirun`` with the SMDataParallelRunner's options and
  exactly its exports (NCCL, EFA and ``SMDATAPARALLEL_*`` settings, no ``SM_*``), without
  ``smddprun`` (a SageMaker-only program).

The ranks run ``python <program>`` rather than the container's ``python -m mpi4py <program>``
(mpi4py is rarely installed locally); a rank that raises still ends the job, through mpirun's
``orte_abort_on_non_zero_status``. A rank on another host starts from that host's own
environment (a SageMaker worker's ssh login reads the ``/etc/environment`` it wrote); what
mpirun exports overrides it: under the MPIRunner, the launching host's ``SM_*`` values, with
paths pointing into the rank's own host directory (which is what ``/opt/ml/...`` means on each
real host). One mpirun application context per host carries that host's working directory,
values and arguments (built from that host's own configuration).

Every command is an argv list. Values never pass through a shell: a program that is not a
Python script is executed directly (the container runs it through ``/bin/sh -c``), and the
ssh stand-in hands mpirun's own remote command line to the shell unedited.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.hosts import (
    NETWORK_INTERFACE,
    TOKEN_VARIABLE,
    EmulatedHost,
    JobSettings,
    clean_environment,
    host_config,
    host_environment,
    hosts_mapping,
    write_config,
    write_environment_files,
)
from smdist.backends.local.layout import LocalLayout
from smdist.backends.local.network import free_ports
from smdist.backends.local.setup import job_region
from smdist.backends.local.ssh_stand_in import HOSTS_VARIABLE
from smdist.contract.commands import (
    Image,
    Launch,
    Launcher,
    mpi_command,
    program_command,
    torchrun_command,
)

if TYPE_CHECKING:
    from smdist.backends.local.network import HostNames
    from smdist.planning.plan import Plan

MPI_TAGS = "mpirun"
PARAMETER_SERVER_HOST = "smdist.contract.parameter_server_host"
SSH_STAND_IN = Path(__file__).with_name("ssh_stand_in.py")


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


def local_launch(layout: LocalLayout, names: list[str]) -> Launch:
    """The layout's launch on the emulated hosts: their names, loopback as the network
    interface, and no EFA: the hosts share this machine, whatever the instance type (forced EFA
    settings make libfabric fail where it is absent)."""
    return replace(
        layout.launch,
        hosts=tuple(names),
        interface=NETWORK_INTERFACE,
        efa=False,
        efa_rdma=False,
    )


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
) -> list[HostCommand]:
    """Each host's config files and environment, then the commands that start the job."""
    ports = free_ports(1 + 2 * layout.hosts)
    hosts_file = job_dir / "nss_hosts"
    hosts_file.write_text(names.hosts_file_text())
    settings = JobSettings(
        job_name=job_dir.name,
        region=job_region(plan),
        token=token,
        master_port=ports[0],
        tf_ports=ports[1 : 1 + layout.hosts],
        ps_ports=ports[1 + layout.hosts :],
        names_environment=names.environment(hosts_file),
        base_environment={**clean_environment(os.environ), TOKEN_VARIABLE: token},
        cpus=os.cpu_count() or 1,
    )
    environments = []
    for host in hosts:
        config = host_config(plan, layout, host, names.names, channels)
        write_config(host, config)
        environments.append(host_environment(plan, layout, host, names.names, config, settings))
    return build_commands(
        local_launch(layout, [host.name for host in hosts]),
        layout,
        hosts,
        environments,
        program=plan.program,
        python=python,
        master_port=ports[0],
        bin_dir=job_dir / "bin",
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
) -> list[HostCommand]:
    names = [host.name for host in hosts]
    rank_hosts = [name for name in names for _ in range(layout.processes_per_host)]
    image = local_image(python)
    if launch.launcher.uses_mpi:
        main_env = dict(environments[0])
        files = write_environment_files(bin_dir, hosts, environments)
        main_env[HOSTS_VARIABLE] = hosts_mapping(hosts, layout.host_gpus, files)
        ssh = write_ssh_stand_in(bin_dir, python)
        main_env["PATH"] = f"{bin_dir}:{main_env.get('PATH', '')}"
        main_env.setdefault("LD_LIBRARY_PATH", "")  # the runners export it by name
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
        return [HostCommand(hosts[0], argv, main_env, hosts[0].code, MPI_TAGS, rank_hosts)]
    commands = []
    for host, env in zip(hosts, environments, strict=True):
        arguments = _script_arguments(env)
        if launch.launcher is Launcher.TORCHRUN:
            argv = torchrun_command(
                launch, host.index, program, arguments,
                torchrun=(python, "-m", "torch.distributed.run"), port=master_port,
                always_rendezvous=True,  # a free port, even for one host: jobs run side by side
            )  # fmt: skip
        elif launch.launcher is Launcher.PARAMETER_SERVER:  # the TF toolkit's steps
            argv = [
                python,
                "-m",
                PARAMETER_SERVER_HOST,
                *program_command(image, program, arguments),
            ]
        else:
            argv = program_command(image, program, arguments)
        commands.append(HostCommand(host, argv, env, host.code))
    return commands


def write_ssh_stand_in(bin_dir: Path, python: str) -> Path:
    """``<bin_dir>/ssh``: mpirun's plm_rsh_agent (and first on PATH for anything else)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "ssh"
    path.write_text(
        f'#!/bin/sh\nexec {shlex.quote(python)} -S -E {shlex.quote(str(SSH_STAND_IN))} "$@"\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def map_host_directory(value: str, main_base: str, host_base: str) -> str:
    """A launching-host value with its directory replaced by ``host_base`` (whole components).

    On SageMaker every host's ``/opt/ml`` is the same path on its own disk; here each host has
    its own directory, so a path the launching host exports must name the rank's host's.
    Applied to single variable values, never to command text.
    """
    if main_base == host_base or main_base not in value:
        return value
    return re.sub(re.escape(main_base) + r"(?=[/\s\"':,;=]|$)", host_base, value)


def _host_exports(
    main_env: Mapping[str, str], main: EmulatedHost, host: EmulatedHost, gpus: list[str]
) -> list[str]:
    """``NAME=value`` exports for one host: the launching host's values, its paths mapped."""
    exports = []
    main_base = str(main.base)
    for name in sorted(main_env):
        value = main_env[name]
        if name == HOSTS_VARIABLE:
            continue  # the host map itself names every host's directory: it stays as it is
        if name.startswith("SM_") or main_base in value:
            exports.append(f"{name}={map_host_directory(value, main_base, str(host.base))}")
    exports.append(f"CUDA_VISIBLE_DEVICES={','.join(gpus)}")
    return exports


def _emulation_flags(ssh: Path) -> list[str]:
    """What the emulation adds to mpirun: remote starts go through the ssh stand-in; a daemon
    that never calls back fails the launch, not hangs it."""
    return ["-mca", "plm_rsh_agent", str(ssh), "-mca", "orte_startup_timeout", "120"]


def _host_contexts(
    hosts: list[EmulatedHost],
    per_host: int,
    exports: list[list[str]],
    programs: list[list[str]],
) -> list[str]:
    """mpirun's per-host contexts (``A : B``): each host its ranks, its own code directory (the
    hosts' ``/opt/ml`` differ here), its exports and its program's argv."""
    command: list[str] = []
    for index, host in enumerate(hosts):
        if index:
            command.append(":")
        command += ["-np", str(per_host), "-host", f"{host.name}:{per_host}"]
        command += ["-wdir", str(host.code)]
        for export in exports[index]:
            command += ["-x", export]
        command += programs[index]
    return command


def local_mpirun(
    launch: Launch,
    image: Image,
    hosts: list[EmulatedHost],
    main_env: Mapping[str, str],
    host_arguments: list[list[str]],
    *,
    program: str,
    ssh: Path,
    host_gpus: list[list[str]],
) -> list[str]:
    """The runner's one mpirun (``host_commands``), spread over per-host contexts.

    The runner's flags and exports stay as they are; the emulation adds its own flags, and
    under the MPIRunner each host's ``SM_*`` values (its paths) where SageMaker exports the
    names. ``host_arguments``: each host's script arguments.
    """
    commands = [mpi_command(launch, image, program, arguments) for arguments in host_arguments]
    flags, exports = commands[0].flags_and_exports()
    if "--oversubscribe" not in flags:  # the SMDataParallelRunner's flags have it
        flags = ["--oversubscribe", *flags]  # the emulated hosts share this machine's cores
    command = ["mpirun", "--host", commands[0].host_list, *flags, *_emulation_flags(ssh)]
    if launch.launcher is Launcher.SMDDP:  # the SMDataParallelRunner exports no SM_* variable
        per_host_exports = [exports] * len(hosts)
    else:
        per_host_exports = [
            exports + _host_exports(main_env, hosts[0], host, host_gpus[host.index])
            for host in hosts
        ]
    programs = [built.program for built in commands]
    return command + _host_contexts(hosts, launch.processes_per_host, per_host_exports, programs)
