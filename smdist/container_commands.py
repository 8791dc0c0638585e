"""The command each SageMaker host starts, as the training toolkit's runners build it.

``smdist plan --hosts`` shows these; the local backend runs its own adaptation of them
(``backends/local_launch.py``: free ports, an ssh stand-in, the emulated hosts' directories).
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

PYTHON = "python"  # the image's interpreter (/opt/conda/bin/python3.x in the DLCs)
TORCHRUN_PORT = 7777  # the TorchDistributedRunner's MASTER_PORT
SMDDP_SERVER_PORT = 7592  # the SMDataParallelRunner's server port
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


def split_custom_mpi_options(options: str) -> tuple[str, list[str]]:
    """(NCCL_DEBUG, the other options in order), as the toolkit parses custom MPI options."""
    tokens = shlex.split(options or "")
    nccl_debug, rest, index = "INFO", [], 0
    while index < len(tokens):
        if tokens[index] == "--NCCL_DEBUG" and index + 1 < len(tokens):
            nccl_debug = tokens[index + 1]
            index += 2
            continue
        rest.append(tokens[index])
        index += 1
    return nccl_debug, rest


def _mca(*pairs: tuple[str, str]) -> list[str]:
    return [token for name, value in pairs for token in ("-mca", name, value)]


def _exports(values: Sequence[str]) -> list[str]:
    return [token for value in values for token in ("-x", value)]


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
    nccl_debug, additional = split_custom_mpi_options(custom_mpi_options)
    if processes_per_host == 1:
        host_list = list(hosts)
    else:
        host_list = [f"{host}:{processes_per_host}" for host in hosts]
    command = [
        "mpirun", "--host", ",".join(host_list), "-np", str(processes_per_host * len(hosts)),
        "--allow-run-as-root", "--display-map", "--tag-output",
        *_mca(("btl_tcp_if_include", interface), ("oob_tcp_if_include", interface),
              ("plm_rsh_no_tree_spawn", "1")),
        "-bind-to", "none", "-map-by", "slot",
        *_mca(("pml", "ob1"), ("btl", "^openib"), ("orte_abort_on_non_zero_status", "1"),
              ("btl_vader_single_copy_mechanism", "none")),
        *_exports(["NCCL_MIN_NRINGS=4", f"NCCL_SOCKET_IFNAME={interface}",
                   f"NCCL_DEBUG={nccl_debug}", "LD_LIBRARY_PATH", "PATH",
                   f"LD_PRELOAD={GETHOSTNAME_SHIM}"]),
        *additional,
    ]  # fmt: skip
    if "FI_PROVIDER" in efa:
        command += _exports(["FI_PROVIDER=efa", "NCCL_PROTO=simple"])
    if "FI_EFA_USE_DEVICE_RDMA" in efa:
        command += _exports(["FI_EFA_USE_DEVICE_RDMA=1"])
    return command + _exports(sm_names) + script


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
    nccl_debug, additional = split_custom_mpi_options(custom_mpi_options)
    multi_host = len(hosts) > 1
    host_list = [f"{host}:{processes_per_host}" if multi_host else host for host in hosts]
    flag = "SMDATAPARALLEL_USE_HOMOGENEOUS=1" if multi_host else "SMDATAPARALLEL_USE_SINGLENODE=1"
    command = [
        "mpirun", "--host", ",".join(host_list), "-np", str(processes_per_host * len(hosts)),
        "--allow-run-as-root", "--tag-output", "--oversubscribe",
        *_mca(("btl_tcp_if_include", interface), ("oob_tcp_if_include", interface),
              ("plm_rsh_no_tree_spawn", "1"), ("pml", "ob1"), ("btl", "^openib"),
              ("orte_abort_on_non_zero_status", "1"),
              ("btl_vader_single_copy_mechanism", "none"),
              ("plm_rsh_num_concurrent", str(len(hosts)))),
        *_exports([f"NCCL_SOCKET_IFNAME={interface}", f"NCCL_DEBUG={nccl_debug}",
                   "LD_LIBRARY_PATH", "PATH", flag, "FI_PROVIDER=efa", "RDMAV_FORK_SAFE=1",
                   f"LD_PRELOAD={GETHOSTNAME_SHIM}"]),
        *additional,
    ]  # fmt: skip
    if "FI_PROVIDER" in efa:
        command += _exports(["NCCL_PROTO=simple"])
    if "FI_EFA_USE_DEVICE_RDMA" in efa:
        command += _exports(["FI_EFA_USE_DEVICE_RDMA=1"])
    if multi_host:
        command += _exports(
            [
                f"SMDATAPARALLEL_SERVER_ADDR={hosts[0]}",
                f"SMDATAPARALLEL_SERVER_PORT={SMDDP_SERVER_PORT}",
                f"SAGEMAKER_INSTANCE_TYPE={instance_type}",
            ]
        )
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
