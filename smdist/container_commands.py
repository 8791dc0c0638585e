"""The command each SageMaker host starts, as the training toolkit's runners build it.

``smdist plan --hosts`` shows these; the local backend runs its own adaptation of them
(``backends/local/launch.py``: free ports, an ssh stand-in, the emulated hosts' directories).
What each launcher runs in the container (sagemaker-training 5.x):

- ``process`` / ``tf_config``: the program on every host, ``python <program> --name value ...``
  (a program that is not a Python script runs through ``/bin/sh -c``);
- ``torchrun`` (the toolkit's TorchDistributedRunner): ``torchrun`` on every host, with a static
  rendezvous on the first host at port 7777 when there is more than one host;
- ``mpirun`` (the MPIRunner) and ``smddp`` (the SMDataParallelRunner): ONE ``mpirun`` on the
  first host, spanning every host; the other hosts start sshd and wait for mpirun's daemons.
  The ranks run ``python -m mpi4py <program>`` (an uncaught exception aborts the job).

Pure: nothing is started. The argv lists are shown, never run, so the ``/bin/sh -c`` line of a
non-Python program is rendered here only to show what the container does with it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smdist.runtime.mpi_command import (
    host_list,
    mpi_exports,
    mpi_flags,
    smddp_exports,
    smddp_flags,
    split_custom_options,
)

PYTHON = "python"  # the image's interpreter (/opt/conda/bin/python3.x in the DLCs)
TORCHRUN_PORT = 7777  # the TorchDistributedRunner's MASTER_PORT
GETHOSTNAME_SHIM = "<sagemaker_training gethostname.so>"  # LD_PRELOAD of both MPI runners
MPI_LAUNCHERS = ("mpirun", "smddp")


@dataclass(frozen=True)
class HostCommand:
    """What one host starts: an argv, or nothing (it waits for the first host's mpirun)."""

    argv: list[str] | None
    role: str


def script_command(program: str, arguments: Sequence[str], *, mpi4py: bool = False) -> list[str]:
    """How the toolkit's process runner starts the program on a host."""
    if program.endswith(".py"):
        return [PYTHON, *(["-m", "mpi4py"] if mpi4py else []), program, *arguments]
    return ["/bin/sh", "-c", shlex.join([f"./{program}", *arguments])]


def torchrun_command(
    hosts: Sequence[str], index: int, processes_per_host: int, program: str, arguments: list[str]
) -> list[str]:
    command = ["torchrun", "--nnodes", str(len(hosts)), "--nproc_per_node", str(processes_per_host)]
    if len(hosts) > 1:
        command += ["--master_addr", hosts[0], "--master_port", str(TORCHRUN_PORT)]
        command += ["--node_rank", str(index)]
    return [*command, program, *arguments]


def _exports(values: Sequence[str]) -> list[str]:
    return [token for value in values for token in ("-x", value)]


def _efa_exports(efa: Mapping[str, str], *, smddp: bool) -> list[str]:
    exports = []
    if "FI_PROVIDER" in efa:
        exports += ["NCCL_PROTO=simple"] if smddp else ["FI_PROVIDER=efa", "NCCL_PROTO=simple"]
    if "FI_EFA_USE_DEVICE_RDMA" in efa:
        exports.append("FI_EFA_USE_DEVICE_RDMA=1")
    return exports


def mpirun_command(
    hosts: Sequence[str],
    processes_per_host: int,
    interface: str,
    efa: Mapping[str, str],
    sm_names: Sequence[str],
    custom_mpi_options: str,
    script: list[str],
) -> list[str]:
    """The MPIRunner's mpirun: every ``SM_*`` variable exported by name (``-x NAME``)."""
    flags, custom_exports, nccl_debug = split_custom_options(custom_mpi_options)
    command = [
        "mpirun",
        "--host", host_list(hosts, processes_per_host, always_count=False),
        "-np", str(processes_per_host * len(hosts)),
        *mpi_flags(interface),
        *_exports([*mpi_exports(interface, nccl_debug), "LD_LIBRARY_PATH", "PATH",
                   f"LD_PRELOAD={GETHOSTNAME_SHIM}"]),
        *flags, *_exports(custom_exports),
    ]  # fmt: skip
    return command + _exports(_efa_exports(efa, smddp=False)) + _exports(sm_names) + script


def smddp_command(
    hosts: Sequence[str],
    processes_per_host: int,
    interface: str,
    efa: Mapping[str, str],
    instance_type: str,
    custom_mpi_options: str,
    script: list[str],
) -> list[str]:
    """The SMDataParallelRunner's mpirun, then ``smddprun``: it exports no ``SM_*`` variable."""
    flags, custom_exports, nccl_debug = split_custom_options(custom_mpi_options)
    paths = {"LD_LIBRARY_PATH": "", "PATH": ""}
    exports = smddp_exports(interface, nccl_debug, hosts, instance_type, paths)
    command = [
        "mpirun",
        "--host", host_list(hosts, processes_per_host, always_count=len(hosts) > 1),
        "-np", str(processes_per_host * len(hosts)),
        *smddp_flags(interface, len(hosts)),
        *_exports([*exports, f"LD_PRELOAD={GETHOSTNAME_SHIM}"]),
        *flags, *_exports(custom_exports),
        *_exports(_efa_exports(efa, smddp=True)),
    ]  # fmt: skip
    return [*command, "smddprun", *script]


def host_command(
    launcher: str,
    hosts: Sequence[str],
    index: int,
    *,
    processes_per_host: int,
    program: str,
    arguments: list[str],
    first_host_arguments: list[str],
    interface: str,
    instance_type: str,
    efa: Mapping[str, str],
    sm_names: Sequence[str],
    custom_mpi_options: str = "",
) -> HostCommand:
    """What host ``index`` of ``hosts`` starts under ``launcher`` (the strategy's contract)."""
    if launcher in ("process", "tf_config"):
        return HostCommand(script_command(program, arguments), "runs the program")
    if launcher == "torchrun":
        argv = torchrun_command(hosts, index, processes_per_host, program, arguments)
        return HostCommand(argv, f"runs torchrun: {processes_per_host} process(es) on this host")
    if launcher not in MPI_LAUNCHERS:
        raise ValueError(f"unknown container launcher {launcher!r}")
    if index:
        return HostCommand(
            None,
            f"starts sshd and waits: mpirun on {hosts[0]} starts this host's "
            f"{processes_per_host} rank(s) through its orted daemon",
        )
    # The ranks on every host get the first host's arguments: one mpirun command line.
    script = script_command(program, first_host_arguments, mpi4py=True)
    if launcher == "mpirun":
        argv = mpirun_command(
            hosts, processes_per_host, interface, efa, sm_names, custom_mpi_options, script
        )
    else:
        argv = smddp_command(
            hosts, processes_per_host, interface, efa, instance_type, custom_mpi_options, script
        )
    total = processes_per_host * len(hosts)
    return HostCommand(argv, f"runs mpirun: {total} rank(s) across {len(hosts)} host(s)")
