"""The command each emulated host runs, per distribution, as the SageMaker container runs it.

- no distribution (incl. smdist's torchrun launcher, which starts torchrun itself) and
  MultiWorkerMirroredStrategy: the program as a plain process on every host,
  ``python -- <program> --name value ...``;
- ``torch_distributed`` (DDP's SageMaker launcher, SMP v2): ``torchrun`` on every host with
  a static rendezvous on the first host (a free port instead of the container's 7777);
- ``mpi`` (SMP v1) and ``smdistributed.dataparallel``: ONE ``mpirun`` on the first host
  spanning all hosts, with the container's options (``--tag-output``, ``-x`` of every
  ``SM_*`` variable, ...), plus ``--allow-run-as-root`` and ``--oversubscribe``; it reaches
  the other hosts through the ssh stand-in (``local_ssh.py``). The ranks run ``python
  <program>`` rather than the container's ``python -m mpi4py <program>`` (mpi4py is rarely
  installed locally); a rank that raises still ends the job, through mpirun's
  ``orte_abort_on_non_zero_status``;
- ``mpi`` for Horovod: ``horovodrun --gloo`` (which works with Horovod builds without MPI)
  across the hosts, also through the ssh stand-in.

Under one mpirun, every rank sees the launching host's variables, as on SageMaker, with paths
pointing into the rank's own host directory (which is what ``/opt/ml/...`` means on each real
host). One mpirun application context per host carries that host's working directory and
values.
"""

from __future__ import annotations

import json
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smdist.backends.local_hosts import EmulatedHost, hosts_mapping
from smdist.backends.local_layout import HOROVODRUN, MPIRUN, TORCHRUN, LocalLayout
from smdist.backends.local_ssh import HOSTS_VARIABLE, rewrite

MPI_TAGS, HOROVOD_TAGS = "mpirun", "horovodrun"
SSH_STAND_IN = Path(__file__).with_name("local_ssh.py")
# Variables the container's mpirun command exports by name besides the SM_* ones.
_MPI_EXPORTED = ("LD_LIBRARY_PATH", "PATH", "LD_PRELOAD")


@dataclass(frozen=True)
class HostCommand:
    """One process to start as an emulated host's first process."""

    host: EmulatedHost
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    tags: str | None = None  # output lines carry rank tags of this launcher
    rank_hosts: list[str] = field(default_factory=list)  # global rank -> host name


def program_command(python: str, program: str, arguments: list[str]) -> list[str]:
    """How the container runs the program: a Python script, or anything else through sh."""
    if program.endswith(".py"):
        return [python, "--", program, *arguments]
    quoted = " ".join(shlex.quote(argument) for argument in arguments)
    return ["/bin/sh", "-c", f"./{shlex.quote(program)} {quoted}".rstrip()]


def _script_arguments(env: Mapping[str, str]) -> list[str]:
    return list(json.loads(env["SM_USER_ARGS"]))


def build_commands(
    layout: LocalLayout,
    hosts: list[EmulatedHost],
    environments: list[dict[str, str]],
    *,
    program: str,
    python: str,
    master_port: int,
    bin_dir: Path,
    custom_mpi_options: str = "",
) -> list[HostCommand]:
    names = [host.name for host in hosts]
    rank_hosts = [name for name in names for _ in range(layout.processes_per_host)]
    if layout.launcher in (MPIRUN, HOROVODRUN):
        main_env = dict(environments[0])
        main_env[HOSTS_VARIABLE] = hosts_mapping(hosts, layout.host_gpus)
        ssh = write_ssh_stand_in(bin_dir, python)
        main_env["PATH"] = f"{bin_dir}:{main_env.get('PATH', '')}"
        if layout.launcher == MPIRUN:
            argv = mpirun_command(
                layout,
                hosts,
                main_env,
                program=program,
                python=python,
                ssh=ssh,
                custom_mpi_options=custom_mpi_options,
            )
            tags = MPI_TAGS
        else:
            argv = horovodrun_command(layout, hosts, main_env, program=program, python=python)
            tags = HOROVOD_TAGS
        return [HostCommand(hosts[0], argv, main_env, hosts[0].code, tags, rank_hosts)]
    commands = []
    for host, env in zip(hosts, environments, strict=True):
        arguments = _script_arguments(env)
        if layout.launcher == TORCHRUN:
            argv = [
                python, "-m", "torch.distributed.run",
                "--nnodes", str(layout.hosts),
                "--nproc_per_node", str(layout.processes_per_host),
                "--master_addr", names[0],
                "--master_port", str(master_port),
                "--node_rank", str(host.index),
                program, *arguments,
            ]  # fmt: skip
        else:
            argv = program_command(python, program, arguments)
        commands.append(HostCommand(host, argv, env, host.code))
    return commands


def write_ssh_stand_in(bin_dir: Path, python: str) -> Path:
    """``<bin_dir>/ssh``: first on PATH for horovodrun, plm_rsh_agent for mpirun."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "ssh"
    path.write_text(
        f'#!/bin/sh\nexec {shlex.quote(python)} -S -E {shlex.quote(str(SSH_STAND_IN))} "$@"\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _split_custom_options(options: str) -> tuple[list[str], list[str], str]:
    """(global flags, ``-x`` exports, NCCL_DEBUG) as the toolkit splits custom MPI options."""
    tokens = shlex.split(options)
    flags: list[str] = []
    exports: list[str] = []
    nccl_debug = "INFO"
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "-x" and index + 1 < len(tokens):
            exports.append(tokens[index + 1])
            index += 2
            continue
        if token == "--NCCL_DEBUG" and index + 1 < len(tokens):
            nccl_debug = tokens[index + 1]
            index += 2
            continue
        flags.append(token)
        index += 1
    return flags, exports, nccl_debug


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
            exports.append(f"{name}={rewrite(value, main_base, str(host.base))}")
    exports.append(f"CUDA_VISIBLE_DEVICES={','.join(gpus)}")
    return exports


def mpirun_command(
    layout: LocalLayout,
    hosts: list[EmulatedHost],
    main_env: Mapping[str, str],
    *,
    program: str,
    python: str,
    ssh: Path,
    custom_mpi_options: str,
) -> list[str]:
    per_host = layout.processes_per_host
    host_list = [h.name if per_host == 1 else f"{h.name}:{per_host}" for h in hosts]
    flags, custom_exports, nccl_debug = _split_custom_options(custom_mpi_options)
    interface = main_env.get("SM_NETWORK_INTERFACE_NAME", "lo")
    command = [
        "mpirun",
        "--host", ",".join(host_list),
        "--allow-run-as-root",
        "--oversubscribe",
        "--display-map",
        "--tag-output",
        "-mca", "btl_tcp_if_include", interface,
        "-mca", "oob_tcp_if_include", interface,
        "-mca", "plm_rsh_no_tree_spawn", "1",
        "-mca", "plm_rsh_agent", str(ssh),
        # A daemon that never calls back fails the launch instead of hanging it.
        "-mca", "orte_startup_timeout", "120",
        "-bind-to", "none",
        "-map-by", "slot",
        "-mca", "pml", "ob1",
        "-mca", "btl", "^openib",
        "-mca", "orte_abort_on_non_zero_status", "1",
        "-mca", "btl_vader_single_copy_mechanism", "none",
        *flags,
    ]  # fmt: skip
    arguments = _script_arguments(main_env)
    for index, host in enumerate(hosts):
        if index:
            command.append(":")
        command += ["-np", str(per_host), "-host", f"{host.name}:{per_host}"]
        command += ["-wdir", str(host.code)]
        exported = [
            "NCCL_MIN_NRINGS=4",
            f"NCCL_SOCKET_IFNAME={interface}",
            f"NCCL_DEBUG={nccl_debug}",
            *(name for name in _MPI_EXPORTED if name in main_env),
            *custom_exports,
            *_host_exports(main_env, hosts[0], host, layout.host_gpus[host.index]),
        ]
        for export in exported:
            command += ["-x", export]
        host_arguments = [rewrite(a, str(hosts[0].base), str(host.base)) for a in arguments]
        command += program_command(python, program, host_arguments)
    return command


def horovodrun_command(
    layout: LocalLayout,
    hosts: list[EmulatedHost],
    main_env: Mapping[str, str],
    *,
    program: str,
    python: str,
) -> list[str]:
    per_host = layout.processes_per_host
    return [
        python, "-m", "horovod.runner.launch",
        "--gloo",
        "-np", str(per_host * len(hosts)),
        "-H", ",".join(f"{host.name}:{per_host}" for host in hosts),
        "--network-interfaces", main_env.get("SM_NETWORK_INTERFACE_NAME", "lo"),
        *program_command(python, program, _script_arguments(main_env)),
    ]  # fmt: skip
