"""SageMaker model parallelism (SMP): split a model over GPUs, replicate the split for data.

Version 1 (``smdistributed.modelparallel``, PyTorch and TensorFlow, started by mpirun) pipelines
the model over ``partitions`` devices, feeding ``microbatches`` slices of each batch through the
pipeline; every group of ``partitions x tensor_parallel_degree`` ranks holds one model replica
and the replicas train data-parallel. Version 2 (PyTorch only, built on FSDP, started by
torchrun) shards parameters over ``hybrid_shard_degree`` ranks and splits layers over
``tensor_parallel_degree`` ranks.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from smdist.cluster import Cluster
from smdist.errors import Problem
from smdist.strategies.base import MPIOptionsMixin, ProcessesPerHost, Strategy, require_library

# SMP v1 placement: "cluster" keeps a replica's model-parallel ranks next to each other (same
# host), "spread" interleaves replicas. With tensor parallelism a permutation of D (data),
# P (pipeline) and T (tensor) gives the order from outermost to innermost; cluster = DPT,
# spread = TPD.
PLACEMENT_ORDERS = {"cluster": "DPT", "spread": "TPD"}

# SMP v1 parameters rendered only when the user set them (None = library default).
_V1_OPTIONAL = (
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
_V2_OPTIONAL = (
    "sm_activation_offloading",
    "activation_loading_horizon",
    "expert_parallel_degree",
    "random_seed",
)


class SDMP(MPIOptionsMixin, Strategy):
    """SageMaker model parallel library, version 1 (pipeline) or 2 (FSDP-based).

    Version 1: partitions (pipeline stages per replica, required), microbatches (slices of each
    per-rank batch), pipeline (interleaved | simple), optimize (speed | memory),
    placement_strategy (cluster | spread | a permutation of D, P, T), auto_partition, ddp,
    tensor_parallel_degree; processes_per_host and custom_mpi_options for mpirun.
    Version 2: hybrid_shard_degree (ranks a parameter is sharded over; 0 = all),
    tensor_parallel_degree, sm_activation_offloading.
    """

    kind: Literal["sdmp"] = "sdmp"
    version: Literal[1, 2] = Field(1, description="SMP library major version")
    framework_name: Literal["pytorch", "tensorflow"] = Field(
        "pytorch", alias="framework", description="pytorch, or tensorflow (version 1 only)"
    )
    processes_per_host: ProcessesPerHost = "auto"
    # version 1
    partitions: int | None = Field(None, ge=1, description="pipeline stages per replica (v1)")
    microbatches: int = Field(1, ge=1, description="microbatches per per-rank batch (v1)")
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
    activation_loading_horizon: int | None = Field(None, ge=1)
    sharded_data_parallel_degree: int | None = Field(None, ge=1)
    horovod: bool | None = Field(None, description="TensorFlow v1: data parallel via Horovod")
    # both versions
    tensor_parallel_degree: int | None = Field(None, ge=1)
    # version 2
    hybrid_shard_degree: int | None = Field(None, ge=0, description="0 = shard over all ranks")
    sm_activation_offloading: bool | None = None
    expert_parallel_degree: int | None = Field(None, ge=1)
    random_seed: int | None = Field(None, ge=0)

    frameworks: ClassVar[tuple[str, ...]] = ("pytorch", "tensorflow")
    model_config = {"populate_by_name": True}

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
    def framework(self) -> str:
        return self.framework_name

    @property
    def default_entry_point(self) -> str:
        return f"pytorch_smp_v{self.version}.py"

    @property
    def launcher_name(self) -> str:  # type: ignore[override]
        return "mpirun across hosts" if self.version == 1 else "SageMaker torch_distributed"

    @property
    def one_process_per_gpu(self) -> bool:  # type: ignore[override]
        return self.version == 2

    def requested_processes_per_host(self):
        return self.processes_per_host

    # ---- degrees -------------------------------------------------------------------------
    @property
    def pipeline_degree(self) -> int:
        return (self.partitions or 1) if self.version == 1 else 1

    @property
    def tensor_degree(self) -> int:
        return self.tensor_parallel_degree or 1

    @property
    def model_parallel_degree(self) -> int:
        return self.pipeline_degree * self.tensor_degree

    def data_parallel_degree(self, cluster: Cluster) -> int:
        return max(self.world_size(cluster) // self.model_parallel_degree, 1)

    @property
    def placement_order(self) -> str:
        return PLACEMENT_ORDERS.get(self.placement_strategy, self.placement_strategy)

    # ---- rendering -----------------------------------------------------------------------
    def parameters(self) -> dict[str, Any]:
        """The ``modelparallel.parameters`` dict (``mp_parameters`` on the wire)."""
        if self.version == 1:
            values: dict[str, Any] = {
                "partitions": self.partitions,
                "microbatches": self.microbatches,
                "pipeline": self.pipeline,
                "optimize": self.optimize,
                "placement_strategy": self.placement_strategy,
                "auto_partition": self.auto_partition,
                "ddp": self.ddp,
            }
            optional = _V1_OPTIONAL
        else:
            values = {}
            if self.hybrid_shard_degree is not None:
                values["hybrid_shard_degree"] = self.hybrid_shard_degree
            values["tensor_parallel_degree"] = self.tensor_degree
            optional = _V2_OPTIONAL
        for name in optional:
            value = getattr(self, name)
            if value is not None:
                values[name] = value
        return values

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        modelparallel = {"enabled": True, "parameters": self.parameters()}
        if self.version == 1:
            mpi = self.mpi_distribution(cluster)
            return {"smdistributed": {"modelparallel": modelparallel}, "mpi": mpi}
        return {
            "torch_distributed": {"enabled": True},
            "smdistributed": {"modelparallel": modelparallel},
        }

    def distribution_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        from smdist.strategies.horovod import mpi_hyperparameters

        values: dict[str, Any] = (
            mpi_hyperparameters(self.mpi_distribution(cluster)) if self.version == 1 else {}
        )
        values["mp_parameters"] = self.parameters()
        values["sagemaker_distributed_dataparallel_enabled"] = False
        values["sagemaker_instance_type"] = cluster.instance_type
        if self.version == 2:
            values["sagemaker_torch_distributed_enabled"] = True
        return values

    # ---- checks --------------------------------------------------------------------------
    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        label = f"SMP v{self.version}"
        if self.version == 1:
            problems += self._check_v1(hyperparameters or {})
        else:
            problems += self._check_v2()
        if self.version == 2 and self.framework == "tensorflow":
            problems.append(
                Problem(
                    "strategy.framework",
                    "SMP v2 runs with PyTorch only",
                    "tensorflow",
                    "pytorch, or version 1 for TensorFlow",
                )
            )
        else:
            problems += require_library(
                f"smp_v{self.version}", label, cluster, self.framework, framework_version
            )
        world = self.world_size(cluster)
        problems += self._check_degrees(world)
        return problems

    def _check_v1(self, hyperparameters: dict[str, Any]) -> list[Problem]:
        problems = []
        if self.partitions is None:
            problems.append(
                Problem(
                    "strategy.partitions",
                    "SMP v1 needs the number of partitions",
                    valid="an integer >= 1, e.g. 2",
                )
            )
        for name in ("hybrid_shard_degree", "sm_activation_offloading", "expert_parallel_degree"):
            if getattr(self, name) is not None:
                problems.append(
                    Problem(
                        f"strategy.{name}",
                        "is an SMP v2 parameter",
                        getattr(self, name),
                        "remove it, or set version: 2",
                    )
                )
        batch = hyperparameters.get("batch_size")
        if isinstance(batch, int) and not isinstance(batch, bool) and batch % self.microbatches:
            problems.append(
                Problem(
                    "strategy.microbatches",
                    f"{self.microbatches} microbatches do not divide the per-rank batch size "
                    f"{batch} (hyperparameters.batch_size)",
                    self.microbatches,
                    "a divisor of the batch size: " + ", ".join(str(d) for d in _divisors(batch)),
                )
            )
        return problems

    def _check_v2(self) -> list[Problem]:
        v1_only = (
            "partitions",
            "default_partition",
            "active_microbatches",
            "horovod",
            "sharded_data_parallel_degree",
        )
        problems = [
            Problem(
                f"strategy.{name}",
                "is an SMP v1 parameter",
                getattr(self, name),
                "remove it, or set version: 1",
            )
            for name in v1_only
            if getattr(self, name) is not None
        ]
        if self.processes_per_host != "auto":
            problems.append(
                Problem(
                    "strategy.processes_per_host",
                    "SMP v2 runs under torchrun with one process per GPU",
                    self.processes_per_host,
                    "'auto'",
                )
            )
        return problems

    def _check_degrees(self, world: int) -> list[Problem]:
        problems = []
        mp = self.model_parallel_degree
        if world % mp:
            what = (
                "partitions x tensor_parallel_degree"
                if self.version == 1
                else ("tensor_parallel_degree")
            )
            path = "strategy.partitions" if self.version == 1 else "strategy.tensor_parallel_degree"
            problems.append(
                Problem(
                    path,
                    f"{what} = {mp} does not divide the world size {world} "
                    "(instances x processes per host)",
                    mp,
                    "a divisor of " + str(world) + ": " + ", ".join(map(str, _divisors(world))),
                )
            )
        elif self.version == 2 and self.hybrid_shard_degree:
            rest = world // mp
            if rest % self.hybrid_shard_degree:
                problems.append(
                    Problem(
                        "strategy.hybrid_shard_degree",
                        f"{self.hybrid_shard_degree} does not divide the {rest} data-parallel "
                        f"ranks (world size {world} / tensor_parallel_degree {mp})",
                        self.hybrid_shard_degree,
                        "0 or a divisor of "
                        + str(rest)
                        + ": "
                        + ", ".join(map(str, _divisors(rest))),
                    )
                )
        return problems


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
