"""The job files ``smdist init`` writes: one starter per way of training, with why each is set.

Each starter takes its strategy section, instance type and image versions from the example of
the same name in the repository's ``examples/`` (a test keeps the two equal), and trades the
example's training length for a few seconds' run: it is a file to start from, which ``smdist
validate`` accepts and ``smdist run`` runs as written, on a laptop's CPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Field:
    """A ``name: value`` line of the file and the comment that says what it is for."""

    name: str
    value: Any
    comment: str = ""


@dataclass(frozen=True)
class Starter:
    """One job file: its heading, strategy section, instances and image."""

    title: str  # the file's first comment: what trains, and how it starts
    strategy: tuple[Field, ...]
    instance_type: Field
    framework_version: str
    py_version: str
    framework: str = "PyTorch"  # the image's framework, for the comments
    version_note: str = ""  # why this version, where it is not simply the newest


ONE_PER_GPU = "processes on each host; auto = one per GPU of the instance type"
G5 = Field("instance_type", "ml.g5.xlarge", "1 NVIDIA A10G GPU: the cheapest current GPU host")
P3_1 = Field("instance_type", "ml.p3.2xlarge", "1 NVIDIA V100 GPU per host")
P4D = Field("instance_type", "ml.p4d.24xlarge", "8 NVIDIA A100 GPUs per host, EFA networking")
HOROVOD_VERSIONS = "Horovod left the training images after this version"

STARTERS: dict[str, Starter] = {
    "pytorch_ddp": Starter(
        "PyTorch DistributedDataParallel, started by smdist's torchrun launcher on every host.",
        (
            Field("kind", "pytorch_ddp"),
            Field(
                "launcher",
                "torchrun",
                "torchrun on each host (or torch_distributed: SageMaker's own)",
            ),
            Field("processes_per_host", "auto", ONE_PER_GPU),
            Field("max_restarts", 1, "torchrun restarts the ranks this often after a failure"),
        ),  # fmt: skip
        G5,
        "2.13.0",
        "py312",
    ),
    "pytorch_ddp_torch_distributed": Starter(
        "PyTorch DistributedDataParallel through SageMaker's own torch_distributed launcher.",
        (
            Field("kind", "pytorch_ddp"),
            Field(
                "launcher",
                "torch_distributed",
                "SageMaker's toolkit runs torchrun, one process per GPU",
            ),
        ),  # fmt: skip
        Field("instance_type", "ml.g5.12xlarge", "4 NVIDIA A10G GPUs per host"),
        "2.13.0",
        "py312",
    ),
    "mwms": Starter(
        "TensorFlow MultiWorkerMirroredStrategy: one worker per host, all its GPUs mirrored.",
        (
            Field("kind", "mwms"),
            Field("communication", "auto", "collectives: auto, ring, or nccl (GPUs only)"),
        ),
        G5,
        "2.21",
        "py312",
        framework="TensorFlow",
    ),
    "parameter_server": Starter(
        "TensorFlow ParameterServerStrategy: a parameter server on each host; the first host "
        "coordinates, the others train.",
        (Field("kind", "parameter_server"),),
        Field("instance_type", "ml.c5.2xlarge", "8 vCPUs: parameter servers run on CPUs anyway"),
        "2.21",
        "py312",
        framework="TensorFlow",
    ),
    "horovod_pytorch": Starter(
        "Horovod with PyTorch over MPI: one mpirun starts every rank on every host.",
        (
            Field("kind", "horovod"),
            Field("framework", "pytorch", "pytorch or tensorflow"),
            Field("processes_per_host", 1, ONE_PER_GPU),
        ),
        P3_1,
        "2.0.0",
        "py310",
        version_note=HOROVOD_VERSIONS,
    ),
    "horovod_tensorflow": Starter(
        "Horovod with TensorFlow over MPI: one mpirun starts every rank on every host.",
        (
            Field("kind", "horovod"),
            Field("framework", "tensorflow", "pytorch or tensorflow"),
            Field("processes_per_host", 1, ONE_PER_GPU),
        ),
        P3_1,
        "2.12",
        "py310",
        framework="TensorFlow",
        version_note=HOROVOD_VERSIONS,
    ),
    "sddp": Starter(
        "SageMaker's distributed data parallel library (smddp): PyTorch DDP with AWS's "
        "collectives, on 8-GPU hosts.",
        (
            Field("kind", "sddp"),
            Field("custom_mpi_options", "-verbose -x NCCL_DEBUG=VERSION", "extra mpirun flags"),
        ),
        P4D,
        "2.2.0",
        "py310",
        version_note="an image that carries smddp (none after PyTorch 2.5)",
    ),
    "smp_v1": Starter(
        "SageMaker model parallel v1: each replica pipelined over 2 partitions, replicas "
        "trained data-parallel.",
        (
            Field("kind", "sdmp"),
            Field("version", 1, "the SMP library's major version"),
            Field("partitions", 2, "pipeline stages of each model replica"),
            Field("microbatches", 8, "microbatches each batch is split into for the pipeline"),
            Field("pipeline", "interleaved", "schedule: interleaved or simple"),
            Field("optimize", "speed", "speed or memory"),
            Field(
                "placement_strategy",
                "cluster",
                "a replica's partitions together (cluster) or apart (spread)",
            ),
            Field("auto_partition", True, "SMP splits the model into partitions itself"),
            Field("ddp", True, "replicas trained data-parallel"),
            Field("processes_per_host", 8, "one per GPU: 8 replicas x 2 stages on 2 hosts"),
            Field("custom_mpi_options", "-verbose -x NCCL_DEBUG=VERSION", "extra mpirun flags"),
        ),  # fmt: skip
        Field("instance_type", "ml.p3.16xlarge", "8 NVIDIA V100 GPUs per host"),
        "1.13.1",
        "py39",
        version_note="an image that carries SMP v1 (none after PyTorch 2.0)",
    ),
    "smp_v2": Starter(
        "SageMaker model parallel v2 (FSDP based): parameters sharded within each host, "
        "replicated across hosts.",
        (
            Field("kind", "sdmp"),
            Field("version", 2, "the SMP library's major version"),
            Field("hybrid_shard_degree", 8, "ranks a parameter is sharded over (0: all)"),
            Field("tensor_parallel_degree", 1, "ranks each tensor-parallel layer is split over"),
        ),
        P4D,
        "2.3.1",
        "py311",
        version_note="an SMP v2 image",
    ),
}

# Every starter trains this little: a few seconds on CPUs (set them higher for a real run).
HYPERPARAMETERS = (
    Field("epochs", 1, "passes over the data"),
    Field("max_steps", 20, "stop after this many steps (0: when the epochs end)"),
    Field("samples", 2048, "synthetic examples, when no train channel is given"),
    Field("batch_size", 16, "per process: the global batch grows with the processes"),
    Field("learning_rate", 0.01, "for one process: scaled with the processes"),
    Field("log_every", 5, "steps between [metrics] lines (step, loss, samples/s)"),
)
