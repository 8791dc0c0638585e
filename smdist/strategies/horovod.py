"""Horovod over MPI: ring all-reduce data parallelism, one process per GPU, for PyTorch or TF.

SageMaker starts Horovod with ``mpirun`` across every host when the ``mpi`` distribution is
enabled; ``processes_per_host`` is the number of ranks mpirun starts on each host.
"""

from typing import Any, ClassVar, Literal

from pydantic import Field

from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.spec.cluster import Cluster
from smdist.strategies.base import MPIOptionsMixin, ProcessesPerHost, Strategy
from smdist.strategies.instance_groups import InstanceGroupsMixin
from smdist.strategies.mpi_options import mpi_hyperparameters
from smdist.strategies.neuron import refuse_tensorflow_on_neuron


class Horovod(InstanceGroupsMixin, MPIOptionsMixin, Strategy):
    """Horovod with ``mpirun``: ``processes_per_host`` ranks per host (``auto``: one per GPU)."""

    kind: Literal["horovod"] = "horovod"
    framework_name: Literal["pytorch", "tensorflow"] = Field(
        "pytorch", alias="framework", description="pytorch or tensorflow"
    )
    processes_per_host: ProcessesPerHost = "auto"

    frameworks: ClassVar[tuple[str, ...]] = ("pytorch", "tensorflow")
    container_launcher: ClassVar[Launcher] = Launcher.MPIRUN
    image_library: ClassVar[str | None] = "horovod"

    model_config = {"populate_by_name": True}

    @property
    def framework(self) -> str:
        return self.framework_name

    @property
    def default_entry_point(self) -> str:
        return f"{self.framework_name}_horovod.py"

    def requested_processes_per_host(self):
        return self.processes_per_host

    def rank_modules(self) -> dict[str, str]:
        return {"horovod": "Horovod jobs import it in every rank"}

    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        if self.framework_name == "tensorflow":
            problems += refuse_tensorflow_on_neuron(cluster, "Horovod")
        return problems

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        return {"mpi": self.mpi_distribution(cluster)}

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        return mpi_hyperparameters(self.mpi_distribution(cluster))
