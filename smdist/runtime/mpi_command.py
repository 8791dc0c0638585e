"""The mpirun command lines SageMaker's training toolkit starts, as argv lists.

Two launchers of the toolkit start ranks with Open MPI: the ``MPIRunner`` (Horovod and SMP v1,
``sagemaker_mpi_enabled``) and the ``SMDataParallelRunner`` (smddp). Their flags and exports
live here once, standard library only, because both sides need them: the local backend runs
them across emulated hosts (adding what the emulation needs: its ssh stand-in, per-host
directories), and smdist's SDK v3 driver runs them inside real SageMaker containers, where SDK
v3 has no launcher of its own for these strategies.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

# The toolkit's MPIRunner: mpirun's global flags.
_MPI_FLAGS = (
    "-mca", "plm_rsh_no_tree_spawn", "1",
    "-bind-to", "none",
    "-map-by", "slot",
    "-mca", "pml", "ob1",
    "-mca", "btl", "^openib",
    "-mca", "orte_abort_on_non_zero_status", "1",
    "-mca", "btl_vader_single_copy_mechanism", "none",
)  # fmt: skip
# The SMDataParallelRunner's.
_SMDDP_FLAGS = (
    "-mca", "plm_rsh_no_tree_spawn", "1",
    "-mca", "pml", "ob1",
    "-mca", "btl", "^openib",
    "-mca", "orte_abort_on_non_zero_status", "1",
    "-mca", "btl_vader_single_copy_mechanism", "none",
)  # fmt: skip
SMDDP_SERVER_PORT = 7592  # the SMDataParallelRunner's
# Variables the MPIRunner exports by name besides the SM_* ones.
MPI_EXPORTED = ("LD_LIBRARY_PATH", "PATH", "LD_PRELOAD")


def split_custom_options(options: str) -> tuple[list[str], list[str], str]:
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


def interface_flags(interface: str) -> list[str]:
    return ["-mca", "btl_tcp_if_include", interface, "-mca", "oob_tcp_if_include", interface]


def mpi_flags(interface: str) -> list[str]:
    """The MPIRunner's flags after ``--host``: rank output tagged, TCP on ``interface``."""
    return ["--allow-run-as-root", "--display-map", "--tag-output"] + [
        *interface_flags(interface),
        *_MPI_FLAGS,
    ]


def smddp_flags(interface: str, host_count: int) -> list[str]:
    """The SMDataParallelRunner's flags after ``--host``."""
    return [
        "--allow-run-as-root",
        "--tag-output",
        "--oversubscribe",
        *interface_flags(interface),
        *_SMDDP_FLAGS,
        "-mca",
        "plm_rsh_num_concurrent",
        str(host_count),
    ]


def mpi_exports(interface: str, nccl_debug: str) -> list[str]:
    return ["NCCL_MIN_NRINGS=4", f"NCCL_SOCKET_IFNAME={interface}", f"NCCL_DEBUG={nccl_debug}"]


def smddp_exports(
    interface: str,
    nccl_debug: str,
    hosts: Sequence[str],
    instance_type: str,
    environ: Mapping[str, str],
) -> list[str]:
    """Exactly the SMDataParallelRunner's exports, in its order (it exports no ``SM_*``)."""
    multi_host = len(hosts) > 1
    exports = [
        f"NCCL_SOCKET_IFNAME={interface}",
        f"NCCL_DEBUG={nccl_debug}",
        *(name for name in ("LD_LIBRARY_PATH", "PATH") if name in environ),
        "SMDATAPARALLEL_USE_HOMOGENEOUS=1" if multi_host else "SMDATAPARALLEL_USE_SINGLENODE=1",
        "FI_PROVIDER=efa",
        "RDMAV_FORK_SAFE=1",
    ]
    if multi_host:
        exports += [
            f"SMDATAPARALLEL_SERVER_ADDR={hosts[0]}",
            f"SMDATAPARALLEL_SERVER_PORT={SMDDP_SERVER_PORT}",
            f"SAGEMAKER_INSTANCE_TYPE={instance_type}",
        ]
    return exports


def host_list(hosts: Sequence[str], per_host: int, *, always_count: bool) -> str:
    return ",".join(h if per_host == 1 and not always_count else f"{h}:{per_host}" for h in hosts)


def container_command(
    launcher: str,
    hosts: Sequence[str],
    per_host: int,
    program_argv: Sequence[str],
    environ: Mapping[str, str],
    *,
    custom_options: str = "",
    instance_type: str = "",
) -> list[str]:
    """The one mpirun a SageMaker container's first host starts (``launcher``: mpirun/smddp).

    Every host has the same paths, so ``SM_*`` and the MPIRunner's variables are exported by
    name and carry the first host's values, as the toolkit does.
    """
    interface = environ.get("SM_NETWORK_INTERFACE_NAME", "eth0")
    flags, custom_exports, nccl_debug = split_custom_options(custom_options)
    total = str(len(hosts) * per_host)
    if launcher == "smddp":
        head = ["mpirun", "--host", host_list(hosts, per_host, always_count=len(hosts) > 1)]
        head += [*smddp_flags(interface, len(hosts)), *flags, "-np", total]
        instance_type = environ.get("SM_CURRENT_INSTANCE_TYPE", instance_type)
        exported = [
            *smddp_exports(interface, nccl_debug, hosts, instance_type, environ),
        ]
    else:
        head = ["mpirun", "--host", host_list(hosts, per_host, always_count=False)]
        head += [*mpi_flags(interface), *flags, "-np", total]
        exported = [
            *mpi_exports(interface, nccl_debug),
            *(name for name in MPI_EXPORTED if name in environ),
            *sorted(name for name in environ if name.startswith("SM_")),
        ]
    command = list(head)
    for export in [*exported, *custom_exports]:
        command += ["-x", export]
    return command + list(program_argv)
