"""The command each SageMaker host starts, built once for every place that starts or shows one.

What the training toolkit's runners start (sagemaker-training 5.x), per launcher:

- ``program`` / ``tf_config``: the program on every host, ``python -- <program> --name value``
  (a program that is not a Python script: ``/bin/sh -c "./<program> args"`` in the container);
- ``torchrun`` (TorchDistributedRunner): ``torchrun`` on every host, with a static rendezvous on
  the first host at port ``TORCHRUN_PORT`` when there is more than one host;
- ``mpirun`` (MPIRunner: Horovod, SMP v1) and ``smddp`` (SMDataParallelRunner): ONE ``mpirun``
  on the first host spanning every host; the others start sshd and wait for mpirun's daemon
  (``mpi`` builds it, token for token).

On a cluster of instance groups "every host" is every host of the distribution's groups
(``Launch.hosts``); a host of another group runs the program once (the toolkit's ProcessRunner).

Three callers, one builder: ``smdist plan --hosts`` shows the commands (``Image`` assumed from
the catalogue), smdist's SDK v3 driver runs them in the real container (``Image`` found there),
and the local backend runs them across emulated hosts, adding on top only what the emulation
needs (an ssh stand-in, free ports, per-host directories). All three take the same ``Launch``
(``launch``), which the plan decides. The instance types with EFA come from smdist's dated
catalogue, not the toolkit's hand-kept lists, which lag new instance types.

The builders live beside this module (``launch``: ``Launch``, ``Launcher``, ``Image``;
``program``: the program and torchrun; ``mpi``: the runners' mpirun); every name is importable
from here too.

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .launch import GETHOSTNAME_SHIM, MPI_PROCESSES_PER_HOST, V3_DRIVERS, Image, Launch, Launcher
from .mpi import (
    CREDENTIALS,
    SMDDP_SERVER_PORT,
    MpiCommand,
    host_list,
    interface_flags,
    mpi_command,
    mpirun_command,
    parse_custom_mpi_options,
    smddp_command,
)
from .parameter_server import tf_config as parameter_server_tf_config
from .parameter_server_host import ADDRESSES_ENV
from .program import (
    TORCHRUN_PORT,
    parameter_server_host_command,
    program_command,
    torchrun_command,
)


@dataclass(frozen=True)
class HostCommand:
    """What one host starts: an argv, or nothing (it waits for the first host's mpirun)."""

    argv: list[str] | None
    role: str


@dataclass(frozen=True)
class Rendezvous:
    """How torchrun is started and where its hosts meet: the toolkit's defaults, or an
    emulation's (``python -m torch.distributed.run``, a free port, a rendezvous even on one
    host so that jobs side by side do not collide)."""

    torchrun: tuple[str, ...] = ("torchrun",)
    port: int = TORCHRUN_PORT
    always: bool = False


@dataclass(frozen=True)
class HostArguments:
    """A host's script arguments and, under MPI, the first host's (one command line)."""

    own: list[str]
    first_host: list[str] = field(default_factory=list)


def host_command(
    launch: Launch,
    index: int,
    image: Image,
    program: str,
    arguments: HostArguments,
    *,
    exported_names: Sequence[str] = (),
    environ: Mapping[str, str] = {},  # noqa: B006 - read only
    torchrun: Rendezvous | None = None,
) -> HostCommand:
    """What host ``index`` (of ``launch.all_hosts``) starts under the launch (the strategy's
    contract); ``torchrun``: where the caller's torchrun meets, when not the toolkit's
    ``torchrun`` on ``TORCHRUN_PORT``. A host outside the distribution's instance groups runs
    the program once, as the toolkit's ProcessRunner does."""
    host = launch.all_hosts[index]
    rank = launch.node_rank(host)
    if rank is None:
        group = launch.group_of(host)
        return HostCommand(
            program_command(image, program, arguments.own),
            f"runs the program once: instance group {group.name if group else '?'} is not "
            f"one of the distribution's ({', '.join(launch.distribution_groups)})",
        )
    return _distribution_host_command(
        launch, rank, image, program, arguments, exported_names, environ, torchrun
    )


def _distribution_host_command(
    launch: Launch,
    rank: int,
    image: Image,
    program: str,
    arguments: HostArguments,
    exported_names: Sequence[str],
    environ: Mapping[str, str],
    torchrun: Rendezvous | None,
) -> HostCommand:
    """What the ``rank``-th distribution host starts."""
    per_host = launch.processes_per_host
    if launch.launcher is Launcher.PARAMETER_SERVER:
        argv = parameter_server_host_command(image, program, arguments.own)
        return HostCommand(argv, "starts its parameter server (ps task), then runs the program")
    if launch.launcher.one_program_per_host:
        return HostCommand(program_command(image, program, arguments.own), "runs the program")
    if launch.launcher is Launcher.TORCHRUN:
        meet = torchrun or Rendezvous()
        argv = torchrun_command(
            launch, rank, program, arguments.own,
            torchrun=meet.torchrun, port=meet.port, always_rendezvous=meet.always,
        )  # fmt: skip
        return HostCommand(argv, f"runs torchrun: {per_host} process(es) on this host")
    if rank:
        return HostCommand(
            None,
            f"starts sshd and waits: mpirun on {launch.hosts[0]} starts this host's "
            f"{per_host} rank(s) through its orted daemon",
        )
    command = mpi_command(
        launch,
        image,
        program,
        arguments.first_host,
        exported_names=exported_names,
        environ=environ,
    )
    return HostCommand(
        command.argv(),
        f"runs mpirun: {launch.world_size} rank(s) across {len(launch.hosts)} host(s)",
    )


TF_CONFIG = "TF_CONFIG"
TF_CONFIG_PORT = 8890  # the TensorFlow toolkit's MultiWorkerMirrored worker port


def multi_worker_tf_config(
    hosts: Sequence[str], index: int, ports: Sequence[int]
) -> dict[str, Any]:
    """MultiWorkerMirroredStrategy's TF_CONFIG as the TensorFlow toolkit writes it: every host a
    ``worker`` (on ``ports[i]``; the container's 8890), the task the host's position."""
    workers = [f"{host}:{port}" for host, port in zip(hosts, ports)]
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}


@dataclass(frozen=True)
class HostPorts:
    """Each host's ports where hosts share one machine (an emulation): the TF_CONFIG task's
    and the parameter server's, instead of the container's fixed ones."""

    task: list[int]
    parameter_server: list[int] = field(default_factory=list)


def launcher_environment(
    launcher: Launcher, hosts: Sequence[str], index: int, ports: HostPorts | None = None
) -> dict[str, str]:
    """What the launcher adds to host ``index``'s environment besides the toolkit's ``SM_*``.

    ``tf_config``: TF_CONFIG with every host a worker on port 8890 (or ``ports.task``), as the
    TensorFlow container writes it for MultiWorkerMirroredStrategy. ``parameter_server``:
    nothing in the container (its host steps write the toolkit's TF_CONFIG themselves), the
    addresses to use instead of 2222/2223 where ``ports`` are given.
    """
    if launcher is Launcher.TF_CONFIG:
        task_ports = ports.task if ports else [TF_CONFIG_PORT] * len(hosts)
        return {TF_CONFIG: json.dumps(multi_worker_tf_config(hosts, index, task_ports))}
    if launcher is Launcher.PARAMETER_SERVER and ports is not None:
        addresses = {
            host: [f"{host}:{task}", f"{host}:{server}"]
            for host, task, server in zip(hosts, ports.task, ports.parameter_server)
        }
        return {ADDRESSES_ENV: json.dumps(addresses)}
    return {}


def script_environment(launcher: Launcher, hosts: Sequence[str], index: int) -> dict[str, str]:
    """What the training script on host ``index`` (of the distribution hosts ``hosts``) finds
    from its launcher in the container:
    ``launcher_environment``, plus what a launcher's host steps write before they start it
    (``parameter_server``: the toolkit's TF_CONFIG with ``master``/``worker``/``ps`` tasks,
    none on one host)."""
    environment = launcher_environment(launcher, hosts, index)
    if launcher is Launcher.PARAMETER_SERVER and len(hosts) > 1:
        config = parameter_server_tf_config(list(hosts), hosts[index])
        environment[TF_CONFIG] = json.dumps(config)
    return environment


__all__ = [
    "CREDENTIALS",
    "GETHOSTNAME_SHIM",
    "MPI_PROCESSES_PER_HOST",
    "SMDDP_SERVER_PORT",
    "TF_CONFIG",
    "TF_CONFIG_PORT",
    "TORCHRUN_PORT",
    "V3_DRIVERS",
    "HostArguments",
    "HostCommand",
    "HostPorts",
    "Image",
    "Launch",
    "Launcher",
    "MpiCommand",
    "Rendezvous",
    "host_command",
    "host_list",
    "interface_flags",
    "launcher_environment",
    "mpi_command",
    "mpirun_command",
    "multi_worker_tf_config",
    "parse_custom_mpi_options",
    "program_command",
    "script_environment",
    "smddp_command",
    "torchrun_command",
]
