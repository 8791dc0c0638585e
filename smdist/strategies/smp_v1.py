"""SMP v1 (``smdistributed.modelparallel``): pipeline a model over GPUs, started by mpirun.

Each replica is pipelined over ``partitions`` devices (times ``tensor_parallel_degree``), with
``microbatches`` slices of each per-rank batch in flight; every group of
``partitions x tensor_parallel_degree`` ranks holds one replica and the replicas train
data-parallel. PyTorch and TensorFlow. Every setting below reaches ``mp_parameters`` or mpirun.
"""

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.spec import topology
from smdist.spec.cluster import Cluster
from smdist.spec.topology import Topology
from smdist.strategies.base import MPIOptionsMixin
from smdist.strategies.mpi_options import mpi_hyperparameters
from smdist.strategies.smp_base import ModelParallel, divisors

# Placement: "cluster" keeps a replica's model-parallel ranks next to each other (same host),
# "spread" interleaves replicas. With tensor parallelism a permutation of D (data), P (pipeline)
# and T (tensor) gives the order from outermost to innermost; cluster = DPT, spread = TPD.
PLACEMENT_ORDERS = {"cluster": "DPT", "spread": "TPD"}

# Always in mp_parameters (smdist's defaults, stated so the job does not depend on the
# library's: its own default for optimize is "memory").
_ALWAYS = ("partitions", "microbatches", "pipeline", "optimize", "placement_strategy")
_ALWAYS_AFTER = ("auto_partition", "ddp")
# In mp_parameters only when set (None = the library's default).
_OPTIONAL = (
    "tensor_parallel_degree",
    "default_partition",
    "active_microbatches",
    "fp16",
    "bf16",
    "shard_optimizer_state",
    "prescaled_batch",
    "delayed_parameter_initialization",
    "offload_activations",
    "activation_loading_horizon",
    "sharded_data_parallel_degree",
    "horovod",
)


class SMPv1(MPIOptionsMixin, ModelParallel):
    """SMP v1: partitions (pipeline stages per replica, required), microbatches (slices of each
    per-rank batch), pipeline (interleaved | simple), optimize (speed | memory),
    placement_strategy (cluster | spread | a permutation of D, P, T), auto_partition, ddp,
    tensor_parallel_degree and the other v1 settings; processes_per_host and
    custom_mpi_options for mpirun."""

    version: Literal[1] = Field(1, description="SMP library major version")
    partitions: int | None = Field(None, ge=1, description="pipeline stages per replica")
    microbatches: int = Field(1, ge=1, description="microbatches per per-rank batch")
    pipeline: Literal["interleaved", "simple"] = "interleaved"
    optimize: Literal["speed", "memory"] = "speed"
    placement_strategy: str = Field("cluster", description="cluster | spread | e.g. 'DPT'")
    auto_partition: bool = True
    default_partition: int | None = Field(None, ge=0)
    ddp: bool = False
    active_microbatches: int | None = Field(None, ge=1)
    fp16: bool | None = None
    bf16: bool | None = None
    shard_optimizer_state: bool | None = None
    prescaled_batch: bool | None = None
    delayed_parameter_initialization: bool | None = None
    offload_activations: bool | None = None
    sharded_data_parallel_degree: int | None = Field(None, ge=1)
    horovod: bool | None = Field(None, description="TensorFlow: data parallel via Horovod")

    container_launcher: ClassVar[Launcher] = Launcher.MPIRUN
    image_library: ClassVar[str | None] = "smp_v1"

    @field_validator("placement_strategy")
    @classmethod
    def _known_placement(cls, value: str) -> str:
        if value in PLACEMENT_ORDERS or sorted(value) == ["D", "P", "T"]:
            return value
        raise ValueError(
            f"unknown placement strategy {value!r}; valid: cluster, spread, or a permutation "
            "of D, P, T such as 'DPT'"
        )

    @property
    def pipeline_degree(self) -> int:
        return self.partitions or 1

    @property
    def placement_order(self) -> str:
        return PLACEMENT_ORDERS.get(self.placement_strategy, self.placement_strategy)

    def topology(
        self, hosts: int, processes_per_host: int, mp_parameters: Mapping[str, Any] | None = None
    ) -> Topology:
        if (hosts * processes_per_host) % self.model_parallel_degree:
            return super().topology(hosts, processes_per_host)
        return topology.model_parallel(
            hosts,
            processes_per_host,
            self.pipeline_degree,
            self.tensor_degree,
            self.placement_order,
        )

    # ---- rendering -----------------------------------------------------------------------
    def parameters(self) -> dict[str, Any]:
        values = {name: getattr(self, name) for name in (*_ALWAYS, *_ALWAYS_AFTER)}
        values.update(self._optional(_OPTIONAL))
        return values

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        return {
            "smdistributed": {"modelparallel": self.modelparallel()},
            "mpi": self.mpi_distribution(cluster),
        }

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        values = mpi_hyperparameters(self.mpi_distribution(cluster))
        values["mp_parameters"] = self.parameters()
        values["sagemaker_distributed_dataparallel_enabled"] = False
        values["sagemaker_instance_type"] = cluster.instance_type
        return values

    # ---- checks --------------------------------------------------------------------------
    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        if self.partitions is None:
            problems.append(
                Problem(
                    "strategy.partitions",
                    "SMP v1 needs the number of partitions",
                    valid="an integer >= 1, e.g. 2",
                )
            )
        batch = (hyperparameters or {}).get("batch_size")
        if isinstance(batch, int) and not isinstance(batch, bool) and batch % self.microbatches:
            problems.append(
                Problem(
                    "strategy.microbatches",
                    f"{self.microbatches} microbatches do not divide the per-rank batch size "
                    f"{batch} (hyperparameters.batch_size)",
                    self.microbatches,
                    "a divisor of the batch size: " + ", ".join(map(str, divisors(batch))),
                )
            )
        problems += self._library_problems(cluster, framework_version)
        problems += self._degree_problem(
            self.world_size(cluster),
            "partitions x tensor_parallel_degree",
            "strategy.partitions",
        )
        return problems
