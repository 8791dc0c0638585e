"""What a host's command is built from: the plan's ``Launch`` and the training ``Image``.

``Launch`` says how a job starts its ranks (the ``Launcher``, the hosts, the processes on each,
the instance type's EFA); the strategy renders it once into the plan. ``Image`` says what the
training image gives the command: found in the container by smdist's driver, assumed by
``smdist plan --hosts``, this machine's for the local backend. ``commands`` builds the commands
from the two.

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .groups import HostGroup, group_of, rank_hosts

# The plan's launch as it ships with the job's code (``smdist/launch.json`` beside the runtime):
# smdist's launcher and driver read the resolved counts and fabric from it.
LAUNCH_FILE = "launch.json"
GETHOSTNAME_SHIM = "<sagemaker_training gethostname.so>"  # shown where the image path is unknown
MPI_PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"  # the MPIRunner's count


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


def resolve_processes_per_host(requested: int | None, gpus: int) -> int:
    """The ranks a host starts: ``requested``, or for ``auto`` (None) one per GPU, 1 on a CPU
    host. The one place the count is resolved: planning (``Launch.processes_per_host``), and
    the runtime's launcher where no launch was shipped (plain torchrun)."""
    if requested is not None:
        return requested
    return gpus if gpus > 0 else 1


@dataclass(frozen=True)
class Launch:
    """How a job starts its ranks: rendered once by the strategy into the plan, then read by
    every caller (the SDK requests, ``smdist plan --hosts``, smdist's v3 driver, the local
    backend)."""

    launcher: Launcher
    hosts: tuple[str, ...]
    processes_per_host: int  # ranks on each host, resolved ("auto" is the instance's GPUs)
    instance_type: str
    gpus_per_host: int = 0  # the instance type's GPUs (0: CPU, or a type the catalogue lacks)
    # The count follows the hardware (one per GPU, or the strategy's choice), not the user's
    # number: a machine with fewer GPUs or cores may start fewer.
    processes_follow_hardware: bool = False
    # What the spec asked for (None: auto). It differs from ``processes_per_host`` where the
    # strategy starts one per GPU whatever the spec says; the local backend runs it as asked.
    requested_processes_per_host: int | None = None
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
    # A heterogeneous cluster: every instance group with its hosts, in the request's order;
    # ``hosts`` are then the distribution groups' hosts, and the others run the program once.
    instance_groups: tuple[HostGroup, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "launcher", Launcher(self.launcher))
        object.__setattr__(self, "hosts", tuple(self.hosts))
        groups = tuple(HostGroup.of(group) for group in self.instance_groups)
        object.__setattr__(self, "instance_groups", groups)
        if self.v3_driver not in V3_DRIVERS:
            raise ValueError(f"unknown v3 driver {self.v3_driver!r}; one of {V3_DRIVERS}")

    @property
    def world_size(self) -> int:
        return self.processes_per_host * len(self.hosts)

    @property
    def all_hosts(self) -> tuple[str, ...]:
        """Every host of the job: the groups' (in order), else ``hosts``."""
        if not self.instance_groups:
            return self.hosts
        return tuple(host for group in self.instance_groups for host in group.hosts)

    @property
    def distribution_groups(self) -> tuple[str, ...]:
        """The groups whose hosts run the distributed program (none without groups)."""
        return tuple(g.name for g in self.instance_groups if set(g.hosts) <= set(self.hosts))

    def group_of(self, host: str) -> HostGroup | None:
        return group_of(self.instance_groups, host)

    def node_rank(self, host: str) -> int | None:
        """``host``'s place among the distribution hosts; None for a host of another group."""
        return self.hosts.index(host) if host in self.hosts else None

    def renamed(self, names: Mapping[str, str]) -> Launch:
        """This launch with its hosts called ``names[host]`` (an emulation's names)."""
        groups = tuple(
            replace(group, hosts=tuple(names[host] for host in group.hosts))
            for group in self.instance_groups
        )
        hosts = tuple(names[host] for host in self.hosts)
        return replace(self, hosts=hosts, instance_groups=groups)

    def on_cluster(self, resources: Mapping[str, Any]) -> Launch:
        """This launch on the hosts a container's ``resourceconfig.json`` names: its groups as
        SageMaker filled them (which group gets which numbers is SageMaker's choice), the
        distribution hosts those of the launch's distribution groups."""
        if not self.instance_groups:
            return replace(self, hosts=tuple(resources["hosts"]))
        gpus = {group.name: group.gpus_per_host for group in self.instance_groups}
        groups = tuple(
            HostGroup(
                entry["instance_group_name"],
                entry["instance_type"],
                tuple(entry["hosts"]),
                gpus.get(entry["instance_group_name"], 0),
            )
            for entry in resources.get("instance_groups", [])
        )
        hosts = rank_hosts(resources, self.distribution_groups)
        return replace(self, hosts=tuple(hosts), instance_groups=groups)

    def resized(
        self,
        hosts: Sequence[str],
        processes_per_host: int,
        mp_parameters: dict[str, Any] | None = None,
    ) -> Launch:
        """This launch on other hosts and process counts (the local backend's emulated hosts),
        the toolkit's hyperparameters following: the MPIRunner's process count, SMP's settings.
        A heterogeneous cluster keeps its groups' hosts: only the process counts change."""
        if self.instance_groups and tuple(hosts) != self.hosts:
            raise ValueError(
                f"the hosts of a cluster of instance groups stay {list(self.hosts)}: "
                f"cannot run them as {list(hosts)}"
            )
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
        values["instance_groups"] = [
            {**asdict(group), "hosts": list(group.hosts)} for group in self.instance_groups
        ]
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], **overrides: Any) -> Launch:
        return cls(**{**values, **overrides})

    def to_json(self) -> str:
        """The launch as it ships with the job (``LAUNCH_FILE``)."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=1) + "\n"


def shipped_launch(package_dir: Path) -> Launch | None:
    """The launch shipped in ``package_dir`` (the code's ``smdist/``), None where there is none:
    the runtime run outside a job smdist planned (plain torchrun, a developer's checkout)."""
    path = package_dir / LAUNCH_FILE
    if not path.is_file():
        return None
    return Launch.from_dict(json.loads(path.read_text()))


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
