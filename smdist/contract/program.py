"""The command that starts the program on a host, as the training toolkit builds it: the program
itself (``python -- <program>``; ``python -m mpi4py`` under mpirun; ``/bin/sh -c`` for a program
that is not a Python script), or the TorchDistributedRunner's ``torchrun`` in front of it.

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from .launch import Image, Launch

TORCHRUN_PORT = 7777  # the TorchDistributedRunner's MASTER_PORT


def program_command(
    image: Image, program: str, arguments: Sequence[str], *, mpi: bool = False
) -> list[str]:
    """How the toolkit starts the program: ``python -- program`` (``python -m mpi4py program``
    under mpirun, so that an uncaught exception aborts every rank)."""
    if program.endswith(".py"):
        if mpi and image.mpi4py:
            return [image.python, "-m", "mpi4py", program, *arguments]
        return [image.python, "--", program, *arguments]
    if image.shell_programs:  # shown only: smdist's own launchers execute the program directly
        quoted = " ".join(shlex.quote(argument) for argument in arguments)
        return ["/bin/sh", "-c", f"./{shlex.quote(program)} {quoted}"]
    return [f"./{program}", *arguments]


def torchrun_command(
    launch: Launch,
    index: int,
    program: str,
    arguments: Sequence[str],
    *,
    torchrun: Sequence[str] = ("torchrun",),
    port: int = TORCHRUN_PORT,
    always_rendezvous: bool = False,
) -> list[str]:
    """The TorchDistributedRunner's torchrun on host ``index``."""
    command = [*torchrun, "--nnodes", str(len(launch.hosts))]
    command += ["--nproc_per_node", str(launch.processes_per_host)]
    if len(launch.hosts) > 1 or always_rendezvous:
        command += ["--master_addr", launch.hosts[0], "--master_port", str(port)]
        command += ["--node_rank", str(index)]
    return [*command, program, *arguments]


PARAMETER_SERVER_HOST = "smdist.contract.parameter_server_host"  # the TF toolkit's host steps


def parameter_server_host_command(
    image: Image, program: str, arguments: Sequence[str]
) -> list[str]:
    """A ``parameter_server`` host as the TensorFlow toolkit runs it: its parameter server,
    then the program with TF_CONFIG (``parameter_server_host``)."""
    return [image.python, "-m", PARAMETER_SERVER_HOST, *program_command(image, program, arguments)]
