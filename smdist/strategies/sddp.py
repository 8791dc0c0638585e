"""SageMaker Distributed Data Parallel (smddp): AWS's collective library as a torch backend.

The script calls ``dist.init_process_group(backend="smddp")``; the container starts it with
mpirun (+ smddprun), one process per GPU. smddp runs only on a few multi-GPU instance types and
in particular PyTorch containers (the catalogue lists both), and it gains over NCCL only across
nodes.
"""

from typing import Any, ClassVar, Literal

from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.spec.cluster import Cluster
from smdist.strategies.base import MPIOptionsMixin, Strategy, require_library
from smdist.strategies.instance_groups import InstanceGroupsMixin


class SDDP(InstanceGroupsMixin, MPIOptionsMixin, Strategy):
    """``smdistributed.dataparallel``: one process per GPU on every host, PyTorch only."""

    kind: Literal["sddp"] = "sddp"

    ready_entry_point: ClassVar[str] = "pytorch_sddp.py"
    container_launcher: ClassVar[Launcher] = Launcher.SMDDP
    one_process_per_gpu: ClassVar[bool] = True
    image_library: ClassVar[str | None] = "smddp"

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        return {
            "smdistributed": {
                "dataparallel": {"enabled": True, "custom_mpi_options": self.custom_mpi_options}
            }
        }

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        return {
            "sagemaker_distributed_dataparallel_enabled": True,
            "sagemaker_instance_type": cluster.instance_type,
            "sagemaker_distributed_dataparallel_custom_mpi_options": self.custom_mpi_options,
        }

    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        problems += require_library("smddp", "SMDDP", cluster, "pytorch", framework_version)
        if cluster.instance_count == 1:
            problems.append(
                Problem(
                    "cluster.instance_count",
                    "SDDP on a single node: smddp speeds up inter-node all-reduce only, so one "
                    "node pays its price for nothing; use pytorch_ddp, or 2+ instances",
                    1,
                    severity="warning",
                )
            )
        return problems
