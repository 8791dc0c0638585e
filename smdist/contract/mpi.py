"""The one ``mpirun`` of the MPI launchers, token for token as the training toolkit's runners
build it (sagemaker-training 5.x).

- ``mpirun`` (MPIRunner: Horovod, SMP v1) and ``smddp`` (SMDataParallelRunner): ONE ``mpirun``
  on the first host spanning every host; the others start sshd and wait for mpirun's daemon.
  Ranks run ``python -m mpi4py <program>``; smddp's behind ``smddprun``, SMP v1's behind
  ``smddpmprun``, each where the image has it. The exports follow the runners exactly: NCCL
  settings, the EFA variables of the instance type, the ``gethostname`` shim in ``LD_PRELOAD``
  (without it every host of a SageMaker cluster answers the same host name, and NCCL and MPI
  take the cluster for one machine), SMP v1's NCCL settings, every ``SM_*`` name (MPIRunner).

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .launch import Image, Launch, Launcher
from .program import program_command

SMDDP_SERVER_PORT = 7592  # the SMDataParallelRunner's
# The MPIRunner exports these by name when the launching environment has them.
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")

# The MPIRunner's mpirun flags after --host and -np.
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


@dataclass(frozen=True)
class MpiCommand:
    """One mpirun, in parts, so that the local backend can spread it over per-host contexts.

    ``argv()`` is the runner's command, token for token."""

    host_list: str
    process_count: int
    options: list[str]  # flags and ``-x`` exports, in the runner's order
    program: list[str]  # the launch prefix (smddprun, smddpmprun), then the rank's program

    def argv(self) -> list[str]:
        head = ["mpirun", "--host", self.host_list, "-np", str(self.process_count)]
        return head + self.options + self.program

    def flags_and_exports(self) -> tuple[list[str], list[str]]:
        """``options`` split into mpirun's flags and the ``-x`` values, each in order."""
        flags: list[str] = []
        exports: list[str] = []
        index = 0
        while index < len(self.options):
            if self.options[index] == "-x" and index + 1 < len(self.options):
                exports.append(self.options[index + 1])
                index += 2
            else:
                flags.append(self.options[index])
                index += 1
        return flags, exports


class _OptionError(ValueError):
    pass


def _option_parser() -> Any:
    import argparse  # here: planning builds commands rarely, and argparse costs an import

    class CustomOptionParser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # argparse would exit the process
            raise _OptionError(message)

    return CustomOptionParser(add_help=False)


def parse_custom_mpi_options(options: str) -> tuple[str, list[str]]:
    """(NCCL_DEBUG, the other options) exactly as both runners parse custom MPI options:
    ``--NCCL_DEBUG`` is theirs (default INFO); every other token passes to mpirun in order."""
    parser = _option_parser()
    parser.add_argument("--NCCL_DEBUG", default="INFO", type=str)
    known, others = parser.parse_known_args(options.split())
    return known.NCCL_DEBUG, others


def host_list(hosts: Sequence[str], per_host: int | None) -> str:
    """mpirun's ``--host``: ``algo-1:8,algo-2:8``, or the bare names (``per_host`` None)."""
    return ",".join(host if per_host is None else f"{host}:{per_host}" for host in hosts)


def interface_flags(interface: str) -> list[str]:
    return ["-mca", "btl_tcp_if_include", interface, "-mca", "oob_tcp_if_include", interface]


def _exports(values: Sequence[str]) -> list[str]:
    return [token for value in values for token in ("-x", value)]


def _model_parallel_options(launch: Launch, image: Image) -> tuple[list[str], list[str]]:
    """(exports, prefix) the MPIRunner adds for SMP v1."""
    if not launch.mp_parameters:
        return [], []
    exports: list[str] = []
    if image.torch_version:
        exports.append("NCCL_PROTO=simple")
        if int(image.torch_version.split(".")[0]) > 1:
            exports.append("NCCL_ALGO=ring")  # avoids a hang from torch 2.0 on
    backend = launch.mp_parameters.get("ddp_dist_backend", "auto")
    prefix = ["smddpmprun", "-i", launch.instance_type, "--allow-bypass"]
    return exports, prefix if backend == "auto" and image.smddpmprun else []


def mpirun_command(
    launch: Launch,
    image: Image,
    program: str,
    arguments: Sequence[str],
    *,
    exported_names: Sequence[str] = (),
    environ: Mapping[str, str] = {},  # noqa: B006 - read only
) -> MpiCommand:
    """The MPIRunner's mpirun (Horovod, SMP v1): ``exported_names`` (the ``SM_*`` variables)
    go by name, so every rank gets the first host's values, as on SageMaker."""
    nccl_debug, custom = parse_custom_mpi_options(launch.custom_mpi_options)
    interface = launch.interface
    exports = [
        "NCCL_MIN_NRINGS=4",
        f"NCCL_SOCKET_IFNAME={interface}",
        f"NCCL_DEBUG={nccl_debug}",
        "LD_LIBRARY_PATH",
        "PATH",
        *([f"LD_PRELOAD={image.hostname_shim}"] if image.hostname_shim else []),
    ]
    options = ["--allow-run-as-root", "--display-map", "--tag-output"]
    options += [*interface_flags(interface), *_MPI_FLAGS, *_exports(exports), *custom]
    if launch.efa:
        options += _exports(["FI_PROVIDER=efa", "NCCL_PROTO=simple"])
    if launch.efa_rdma:
        options += _exports(["FI_EFA_USE_DEVICE_RDMA=1"])
    options += _exports([name for name in CREDENTIALS if name in environ])
    options += _exports(list(exported_names))
    mp_exports, prefix = _model_parallel_options(launch, image)
    options += _exports(mp_exports)
    return MpiCommand(
        host_list(
            launch.hosts, None if launch.processes_per_host == 1 else launch.processes_per_host
        ),
        launch.world_size,
        options,
        [*prefix, *program_command(image, program, arguments, mpi=True)],
    )


def smddp_command(
    launch: Launch, image: Image, program: str, arguments: Sequence[str]
) -> MpiCommand:
    """The SMDataParallelRunner's mpirun, then ``smddprun``: it exports no ``SM_*`` variable."""
    nccl_debug, custom = parse_custom_mpi_options(launch.custom_mpi_options)
    interface = launch.interface
    multi_host = len(launch.hosts) > 1
    exports = [
        f"NCCL_SOCKET_IFNAME={interface}",
        f"NCCL_DEBUG={nccl_debug}",
        "LD_LIBRARY_PATH",
        "PATH",
        "SMDATAPARALLEL_USE_HOMOGENEOUS=1" if multi_host else "SMDATAPARALLEL_USE_SINGLENODE=1",
        "FI_PROVIDER=efa",
        "RDMAV_FORK_SAFE=1",
        *([f"LD_PRELOAD={image.hostname_shim}"] if image.hostname_shim else []),
    ]
    options = ["--allow-run-as-root", "--tag-output", "--oversubscribe"]
    options += [*interface_flags(interface), *_SMDDP_FLAGS]
    options += ["-mca", "plm_rsh_num_concurrent", str(len(launch.hosts))]
    options += [*_exports(exports), *custom]
    if launch.efa:
        options += _exports(["NCCL_PROTO=simple"])
    if launch.efa_rdma:
        options += _exports(["FI_EFA_USE_DEVICE_RDMA=1"])
    if multi_host:
        options += _exports([
            f"SMDATAPARALLEL_SERVER_ADDR={launch.hosts[0]}",
            f"SMDATAPARALLEL_SERVER_PORT={SMDDP_SERVER_PORT}",
            f"SAGEMAKER_INSTANCE_TYPE={launch.instance_type}",
        ])  # fmt: skip
    prefix = ["smddprun"] if image.smddprun else []
    return MpiCommand(
        # One host: its bare name, whatever the process count (the runner adds --oversubscribe).
        host_list(launch.hosts, launch.processes_per_host if multi_host else None),
        launch.world_size,
        options,
        [*prefix, *program_command(image, program, arguments, mpi=True)],
    )


def mpi_command(
    launch: Launch,
    image: Image,
    program: str,
    arguments: Sequence[str],
    *,
    exported_names: Sequence[str] = (),
    environ: Mapping[str, str] = {},  # noqa: B006 - read only
) -> MpiCommand:
    """The one mpirun of an MPI launcher (``mpirun`` or ``smddp``)."""
    if launch.launcher is Launcher.SMDDP:
        return smddp_command(launch, image, program, arguments)
    if launch.launcher is not Launcher.MPIRUN:
        raise ValueError(f"{launch.launcher.value!r} starts no mpirun")
    return mpirun_command(
        launch, image, program, arguments, exported_names=exported_names, environ=environ
    )
