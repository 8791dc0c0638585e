"""SMP v2 (``torch.sagemaker``): FSDP-based sharding, started by torchrun, PyTorch only.

Parameters are sharded over ``hybrid_shard_degree`` ranks (0 = all) and layers split over
``tensor_parallel_degree`` ranks; the container starts one process per GPU through SageMaker's
``torch_distributed`` distribution. Every setting below reaches ``mp_parameters``.
"""

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.spec import topology
from smdist.spec.cluster import Cluster
from smdist.spec.topology import Topology
from smdist.strategies.smp_base import ModelParallel, divisors

# In mp_parameters only when set (None = the library's default).
_OPTIONAL = (
    "sm_activation_offloading",
    "activation_loading_horizon",
    "expert_parallel_degree",
    "random_seed",
)


class SMPv2(ModelParallel):
    """SMP v2: hybrid_shard_degree (ranks a parameter is sharded over; 0 = all),
    tensor_parallel_degree, expert_parallel_degree, sm_activation_offloading,
    activation_loading_horizon, random_seed. One process per GPU, always."""

    version: Literal[2] = Field(2, description="SMP library major version")
    hybrid_shard_degree: int | None = Field(None, ge=0, description="0 = shard over all ranks")
    sm_activation_offloading: bool | None = None
    expert_parallel_degree: int | None = Field(None, ge=1)
    random_seed: int | None = Field(None, ge=0)

    container_launcher: ClassVar[Launcher] = Launcher.TORCHRUN
    # In a job file no version means 1, so the schema requires v2's (Python's default is 2).
    model_config = {
        "json_schema_extra": lambda schema: schema.setdefault("required", []).append("version")
    }
    one_process_per_gpu: ClassVar[bool] = True
    image_library: ClassVar[str | None] = "smp_v2"

    def v3_driver(self) -> str:
        return "torchrun"  # v3's Torchrun(smp=SMP(...))

    # ---- rendering -----------------------------------------------------------------------
    def topology(
        self, hosts: int, processes_per_host: int, mp_parameters: Mapping[str, Any] | None = None
    ) -> Topology:
        if (hosts * processes_per_host) % self.model_parallel_degree:
            return super().topology(hosts, processes_per_host)
        shard = (mp_parameters or {}).get("hybrid_shard_degree", self.hybrid_shard_degree)
        return topology.sharded(hosts, processes_per_host, self.tensor_degree, shard or 0)

    def parameters(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        if self.hybrid_shard_degree is not None:
            values["hybrid_shard_degree"] = self.hybrid_shard_degree
        values["tensor_parallel_degree"] = self.tensor_degree
        values.update(self._optional(_OPTIONAL))
        return values

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        return {
            "torch_distributed": {"enabled": True},
            "smdistributed": {"modelparallel": self.modelparallel()},
        }

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        return {
            "mp_parameters": self.parameters(),
            "sagemaker_distributed_dataparallel_enabled": False,
            "sagemaker_instance_type": cluster.instance_type,
            "sagemaker_torch_distributed_enabled": True,
        }

    # ---- on the local backend -------------------------------------------------------------
    def fit_mp_parameters(
        self, parameters: dict[str, Any], world: int
    ) -> tuple[dict[str, Any], list[str]]:
        """A hybrid_shard_degree that no longer divides the local world's data-parallel ranks
        becomes the largest divisor below it."""
        shard = parameters.get("hybrid_shard_degree")
        if not isinstance(shard, int) or shard <= 1:
            return parameters, []
        data_parallel = world // self.tensor_degree
        if shard <= data_parallel and data_parallel % shard == 0:
            return parameters, []
        fitted = max(d for d in divisors(data_parallel) if d <= shard)
        note = (
            f"mp_parameters.hybrid_shard_degree: {shard} -> {fitted} (the local world has "
            f"{data_parallel} data-parallel ranks)"
        )
        return {**parameters, "hybrid_shard_degree": fitted}, [note]

    # ---- checks --------------------------------------------------------------------------
    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        problems += self._processes_problems(cluster)
        if self.framework == "tensorflow":
            problems.append(
                Problem(
                    "strategy.framework",
                    "SMP v2 runs with PyTorch only",
                    "tensorflow",
                    "pytorch, or version 1 for TensorFlow",
                )
            )
        else:
            problems += self._library_problems(cluster, framework_version)
        world = self.world_size(cluster)
        degree = self._degree_problem(
            world, "tensor_parallel_degree", "strategy.tensor_parallel_degree"
        )
        # Shards are counted within the data-parallel ranks, which a bad degree leaves undefined.
        return problems + (degree or self._shard_problem(world))

    def _processes_problems(self, cluster: Cluster) -> list[Problem]:
        """A count other than the GPUs' sets the emulated hosts' processes in local runs (as
        ``smdist run --processes-per-host`` does); SageMaker starts one process per GPU."""
        written, gpus = self.processes_per_host, cluster.gpus_per_host
        if written == "auto" or written == gpus:
            return []
        return [
            Problem(
                "strategy.processes_per_host",
                f"{written} sets the processes of each emulated host in local runs (smdist "
                "run), as --processes-per-host does; SageMaker's SMP v2 starts one process per "
                f"GPU: {gpus} on {cluster.instance_type}",
                written,
                f"'auto' or {gpus} to say what SageMaker runs",
                severity="warning",
            )
        ]

    def local_problems(self) -> list[Problem]:
        """What the local SMP v2 stand-in (plain FSDP) cannot run: tensor and expert
        parallelism need SageMaker's SMP v2 library."""
        return [
            Problem(
                f"strategy.{name}",
                f"{value} needs SageMaker's SMP v2 library (in its PyTorch training images); the "
                "local backend's SMP v2 stand-in runs FSDP sharding only, so local runs need 1 "
                "(SageMaker jobs of this spec are unaffected)",
                value,
                "1 for smdist run / backend local",
            )
            for name, value in (
                ("tensor_parallel_degree", self.tensor_degree),
                ("expert_parallel_degree", self.expert_parallel_degree or 1),
            )
            if value != 1
        ]

    def _shard_problem(self, world: int) -> list[Problem]:
        shard = self.hybrid_shard_degree
        rest = world // self.model_parallel_degree
        if not shard or rest % shard == 0:
            return []
        return [
            Problem(
                "strategy.hybrid_shard_degree",
                f"{shard} does not divide the {rest} data-parallel ranks (world size {world} / "
                f"tensor_parallel_degree {self.model_parallel_degree})",
                shard,
                f"0 or a divisor of {rest}: " + ", ".join(map(str, divisors(rest))),
            )
        ]
