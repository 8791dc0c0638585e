"""The command each SageMaker host starts, built once for every place that starts or shows one.

What the training toolkit's runners start (sagemaker-training 5.x), per launcher:

- ``program`` / ``tf_config``: the program on every host, ``python -- <program> --name value``
  (a program that is not a Python script: ``/bin/sh -c "./<program> args"`` in the container);
- ``torchrun`` (TorchDistributedRunner): ``torchrun`` on every host, with a static rendezvous on
  the first host at port 7777 when there is more than one host;
- ``mpirun`` (MPIRunner: Horovod, SMP v1) and ``smddp`` (SMDataParallelRunner): ONE ``mpirun``
  on the first host spanning every host; the others start sshd and wait for mpirun's daemon.
  Ranks run ``python -m mpi4py <program>``; smddp's behind ``smddprun``, SMP v1's behind
  ``smddpmprun``, each where the image has it. The exports follow the runners exactly: NCCL
  settings, the EFA variables of the instance type, the ``gethostname`` shim in ``LD_PRELOAD``
  (without it every host of a SageMaker cluster answers the same host name, and NCCL and MPI
  take the cluster for one machine), SMP v1's NCCL settings, every ``SM_*`` name (MPIRunner).

Three callers, one builder: ``smdist plan --hosts`` shows the commands (``Image`` assumed from
the catalogue), smdist's SDK v3 driver runs them in the real container (``Image`` found there),
and the local backend runs them across emulated hosts, adding on top only what the emulation
needs (an ssh stand-in, free ports, per-host directories). All three take the same ``Launch``,
which the plan decides. The instance types with EFA come from smdist's dated catalogue, not
the toolkit's hand-kept lists, which lag new instance types.

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

import argparse
import enum
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

TORCHRUN_PORT = 7777  # the TorchDistributedRunner's MASTER_PORT
SMDDP_SERVER_PORT = 7592  # the SMDataParallelRunner's
GETHOSTNAME_SHIM = "<sagemaker_training gethostname.so>"  # shown where the image path is unknown
# The MPIRunner exports these by name when the launching environment has them.
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
MPI_PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"  # the MPIRunner's count

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


class Launcher(str, enum.Enum):
    """What starts a job's ranks in the training container."""

    PROGRAM = "program"  # the program once per host; it is the rank, or starts them itself
    TF_CONFIG = "tf_config"  # the program once per host, with the TensorFlow toolkit's TF_CONFIG
    PARAMETER_SERVER = "parameter_server"  # the TF toolkit: a parameter server, then the program
    TORCHRUN = "torchrun"  # the TorchDistributedRunner: torchrun on every host
    MPIRUN = "mpirun"  # the MPIRunner: one mpirun on the first host, across every host
    SMDDP = "smddp"  # the SMDataParallelRunner: one mpirun, ranks behind smddprun

    @property
    def description(self) -> str:
        return _LAUNCHER_DESCRIPTIONS[self]

    @property
    def uses_mpi(self) -> bool:
        return self in (Launcher.MPIRUN, Launcher.SMDDP)

    @property
    def one_program_per_host(self) -> bool:
        """The container starts the program once on each host (no runner of ranks)."""
        return self in (Launcher.PROGRAM, Launcher.TF_CONFIG, Launcher.PARAMETER_SERVER)

    @property
    def tf_config(self) -> bool:
        return self in (Launcher.TF_CONFIG, Launcher.PARAMETER_SERVER)


_LAUNCHER_DESCRIPTIONS = {
    Launcher.PROGRAM: "the program on every host",
    Launcher.TF_CONFIG: "the program on every host, with TF_CONFIG",
    Launcher.PARAMETER_SERVER: "a parameter server and the program on every host, with TF_CONFIG",
    Launcher.TORCHRUN: "torchrun on every host",
    Launcher.MPIRUN: "one mpirun across the hosts",
    Launcher.SMDDP: "one mpirun across the hosts, ranks behind smddprun",
}
V3_DRIVERS = ("torchrun", "smdist")  # SDK v3's Torchrun driver, or smdist's own


@dataclass(frozen=True)
class Launch:
    """How a job starts its ranks: rendered once by the strategy into the plan, then read by
    every caller (the SDK requests, ``smdist plan --hosts``, smdist's v3 driver, the local
    backend)."""

    launcher: Launcher
    hosts: tuple[str, ...]
    processes_per_host: int  # ranks on each host, resolved ("auto" is the instance's GPUs)
    instance_type: str
    program: str = ""  # what the container runs (sagemaker_program): the script, or a launcher
    efa: bool = False  # the instance type has EFA (FI_PROVIDER=efa, NCCL_PROTO=simple)
    efa_rdma: bool = False  # and its EFA supports RDMA read (FI_EFA_USE_DEVICE_RDMA=1)
    custom_mpi_options: str = ""
    mp_parameters: dict[str, Any] | None = None  # SMP's (v1: they turn on its mpirun settings)
    # What the toolkit reads to pick and size its runner: the hyperparameters SDK v2 derives
    # from the ``distribution`` (sagemaker_mpi_enabled, ..., mp_parameters), before encoding.
    toolkit_hyperparameters: dict[str, Any] = field(default_factory=dict)
    v3_driver: str = "smdist"  # under SDK v3: its Torchrun driver, or smdist's own driver
    interface: str = "eth0"

    def __post_init__(self) -> None:
        object.__setattr__(self, "launcher", Launcher(self.launcher))
        object.__setattr__(self, "hosts", tuple(self.hosts))
        if self.v3_driver not in V3_DRIVERS:
            raise ValueError(f"unknown v3 driver {self.v3_driver!r}; one of {V3_DRIVERS}")

    @property
    def world_size(self) -> int:
        return self.processes_per_host * len(self.hosts)

    def resized(
        self,
        hosts: Sequence[str],
        processes_per_host: int,
        mp_parameters: dict[str, Any] | None = None,
    ) -> Launch:
        """This launch on other hosts and process counts (the local backend's emulated hosts),
        the toolkit's hyperparameters following: the MPIRunner's process count, SMP's settings."""
        toolkit = dict(self.toolkit_hyperparameters)
        if MPI_PROCESSES_PER_HOST in toolkit:
            toolkit[MPI_PROCESSES_PER_HOST] = processes_per_host
        if mp_parameters is not None and "mp_parameters" in toolkit:
            toolkit["mp_parameters"] = mp_parameters
        return replace(
            self,
            hosts=tuple(hosts),
            processes_per_host=processes_per_host,
            mp_parameters=self.mp_parameters if mp_parameters is None else mp_parameters,
            toolkit_hyperparameters=toolkit,
        )

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["launcher"] = self.launcher.value
        values["hosts"] = list(self.hosts)
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], **overrides: Any) -> Launch:
        return cls(**{**values, **overrides})


@dataclass(frozen=True)
class Image:
    """What the training image gives the command: found in the container by smdist's driver,
    assumed (a current DLC) by ``smdist plan --hosts``, this machine's for the local backend."""

    python: str = "python"
    mpi4py: bool = True
    smddprun: bool = True
    smddpmprun: bool = True
    hostname_shim: str | None = GETHOSTNAME_SHIM
    torch_version: str = ""  # SM_DLC_TORCH_VERSION, which the PyTorch DLCs set
    shell_programs: bool = True  # a non-Python program runs through /bin/sh -c (the toolkit)


@dataclass(frozen=True)
class HostCommand:
    """What one host starts: an argv, or nothing (it waits for the first host's mpirun)."""

    argv: list[str] | None
    role: str


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


class _CustomOptionParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the process
        raise _OptionError(message)


def parse_custom_mpi_options(options: str) -> tuple[str, list[str]]:
    """(NCCL_DEBUG, the other options) exactly as both runners parse custom MPI options:
    ``--NCCL_DEBUG`` is theirs (default INFO); every other token passes to mpirun in order."""
    parser = _CustomOptionParser(add_help=False)
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
) -> HostCommand:
    """What host ``index`` starts under the launch (the strategy's contract)."""
    per_host = launch.processes_per_host
    if launch.launcher.one_program_per_host:
        return HostCommand(program_command(image, program, arguments.own), "runs the program")
    if launch.launcher is Launcher.TORCHRUN:
        argv = torchrun_command(launch, index, program, arguments.own)
        return HostCommand(argv, f"runs torchrun: {per_host} process(es) on this host")
    if index:
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
