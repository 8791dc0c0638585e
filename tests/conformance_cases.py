"""The jobs both conformance suites submit (SDK v2 in tests/aws, SDK v3 in tests/aws_v3): every
strategy, both DDP launchers (with and without restarts) and both SMP versions, each on two
clusters. Free of any SDK import: the two suites run in different environments.
"""

from __future__ import annotations

from typing import Any

import pytest

from smdist.spec.job import JobSpec

PT = {"framework_version": "2.3.0", "py_version": "py311"}
TF = {"framework_version": "2.14", "py_version": "py310"}
SMDDP = {"framework_version": "2.2.0", "py_version": "py310"}
SMP1 = {"framework_version": "1.13.1", "py_version": "py39"}
SMP2 = {"framework_version": "2.3.1", "py_version": "py311"}
# The last training images that carry Horovod.
HOROVOD_PT = {"framework_version": "2.0.0", "py_version": "py310"}
HOROVOD_TF = {"framework_version": "2.12", "py_version": "py310"}


def conformance_job(
    prefix: str,
    bucket: str,
    name: str,
    strategy: dict,
    code: dict,
    cluster: tuple[str, int],
    **more: Any,
) -> JobSpec:
    """A conformance job named ``<prefix>-<name>``: two hosts' worth of the settings every case
    shares (a train channel, hyperparameters of each JSON type, environment, checkpoints), its
    data in ``bucket``; ``more`` adds or replaces spec fields."""
    instance_type, count = cluster
    return JobSpec.from_dict(
        {
            "name": f"{prefix}-{name}".replace("_", "-"),
            "strategy": strategy,
            "cluster": {"instance_type": instance_type, "instance_count": count},
            "code": code,
            "inputs": {"train": f"s3://{bucket}/data/train"},
            "hyperparameters": {"epochs": 2, "note": "two words", "flag": True, "sizes": [1, 2]},
            "environment": {"NCCL_DEBUG": "INFO"},
            "checkpoint": {"s3_uri": f"s3://{bucket}/checkpoints/{name}"},
            "max_run": 5400,
            **more,
        }
    )


def every_option_settings(bucket: str) -> dict[str, Any]:
    """The settings of a job with every option that reaches the request (network isolation
    included: under v2 the SDK adds the code channel itself), its data in ``bucket``: a 2 x
    ml.p4d.24xlarge SMDDP job's spec fields beside its name, strategy, code and cluster. No
    volume KMS key: SMDDP's instance types train on NVMe instance storage, where SageMaker
    refuses one (``tests/sdk_lines/test_volume_encryption.py`` sends it on an EBS volume)."""
    return {
        "inputs": {
            "train": f"s3://{bucket}/data/train",
            "val": {
                "uri": f"s3://{bucket}/data/val",
                "distribution": "ShardedByS3Key",
                "input_mode": "FastFile",
            },
        },
        "output_path": f"s3://{bucket}/models",
        "spot": {"enabled": True, "max_wait": 7200},
        "network": {
            "subnets": ["subnet-0123456789abcdef0"],
            "security_group_ids": ["sg-0123456789abcdef0"],
            "isolation": True,
            "encrypt_inter_container_traffic": True,
        },
        "kms": {"output_key_id": "alias/output"},
        "tags": {"team": "vision"},
    }


STRATEGIES: dict[str, tuple[dict[str, Any], dict[str, str], list[tuple[str, int]]]] = {
    "mwms": (
        {"kind": "mwms", "communication": "ring", "collective_timeout": 600},
        TF,
        [("ml.g5.xlarge", 2), ("ml.c5.2xlarge", 3)],
    ),
    "parameter-server": (
        {"kind": "parameter_server"},
        TF,
        [("ml.c5.2xlarge", 2), ("ml.g5.xlarge", 3)],
    ),
    "horovod-pytorch": (
        {"kind": "horovod", "framework": "pytorch", "processes_per_host": 1},
        HOROVOD_PT,
        [("ml.p3.2xlarge", 2), ("ml.g5.12xlarge", 2)],
    ),
    "horovod-tensorflow": (
        {
            "kind": "horovod",
            "framework": "tensorflow",
            "processes_per_host": 4,
            "custom_mpi_options": "-verbose -x NCCL_DEBUG=INFO",
        },
        HOROVOD_TF,
        [("ml.g5.12xlarge", 2), ("ml.p3.8xlarge", 3)],
    ),
    "ddp-torchrun": (
        {"kind": "pytorch_ddp", "launcher": "torchrun", "max_restarts": 2},
        PT,
        [("ml.p3.2xlarge", 2), ("ml.c5.4xlarge", 3)],
    ),
    "ddp-static": (
        {"kind": "pytorch_ddp", "launcher": "torchrun"},
        PT,
        [("ml.p3.2xlarge", 2), ("ml.g5.12xlarge", 3)],
    ),
    "ddp-torch_distributed": (
        {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        PT,
        [("ml.g5.12xlarge", 2), ("ml.p4d.24xlarge", 4)],
    ),
    "sddp": (
        {"kind": "sddp", "custom_mpi_options": "-verbose -x NCCL_DEBUG=VERSION"},
        SMDDP,
        [("ml.p4d.24xlarge", 2), ("ml.p4de.24xlarge", 3)],
    ),
    "smp-v1": (
        {
            "kind": "sdmp",
            "version": 1,
            "partitions": 2,
            "microbatches": 8,
            "pipeline": "interleaved",
            "placement_strategy": "cluster",
            "ddp": True,
            "processes_per_host": 8,
        },
        SMP1,
        [("ml.p3.16xlarge", 2), ("ml.p4d.24xlarge", 1)],
    ),
    "smp-v2": (
        {"kind": "sdmp", "version": 2, "hybrid_shard_degree": 8, "tensor_parallel_degree": 1},
        SMP2,
        [("ml.p4d.24xlarge", 2), ("ml.p5.48xlarge", 2)],
    ),
}

CASES = [
    pytest.param(name, strategy, code, cluster, id=f"{name}-{cluster[0]}x{cluster[1]}")
    for name, (strategy, code, clusters) in STRATEGIES.items()
    for cluster in clusters
]


# ---- the settings large jobs reach for (volume, file systems, groups, capacity, tracking) ----
ACCOUNT = "123456789012"
TRAINING_PLAN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:training-plan/p5-reserved"
MLFLOW_SERVER = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:mlflow-tracking-server/team"
VPC = {"subnets": ["subnet-0123456789abcdef0"], "security_group_ids": ["sg-0123456789abcdef0"]}


def tracking_settings(bucket: str) -> dict[str, Any]:
    """Retries, infrastructure checks, remote debugging, TensorBoard and MLflow."""
    return {
        "retry": {"max_attempts": 3},
        "infra_check": True,
        "remote_debug": True,
        "tensorboard": {"s3_uri": f"s3://{bucket}/tensorboard"},
        "mlflow": {"tracking_server_arn": MLFLOW_SERVER, "experiment": "resnet", "run_name": "r1"},
    }


def file_system_settings(bucket: str) -> dict[str, Any]:
    """A 300 GB volume, an S3 channel and an FSx for Lustre and an EFS channel in a VPC."""
    return {
        "inputs": {
            "train": f"s3://{bucket}/data/train",
            "lustre": {"uri": "fsx://fs-0123456789abcdef0/abcdefgh/imagenet"},
            "shared": {"uri": "efs://fs-0fedcba9876543210/datasets", "access_mode": "rw"},
        },
        "network": VPC,
    }


def heterogeneous_job(prefix: str, bucket: str, name: str = "hetero") -> JobSpec:
    """AWS's heterogeneous-clusters shape: a CPU group feeding a 2-host GPU DDP group, the
    training channel on the GPU group and the raw data on the CPU group."""
    return JobSpec.from_dict(
        {
            "name": f"{prefix}-{name}",
            "strategy": {"kind": "pytorch_ddp", "instance_groups": ["gpu"]},
            "cluster": {
                "instance_groups": [
                    {"name": "data", "instance_type": "ml.c5.2xlarge", "instance_count": 1},
                    {"name": "gpu", "instance_type": "ml.g5.xlarge", "instance_count": 2},
                ],
                "volume_size": 200,
            },
            "code": PT,
            "inputs": {
                "raw": {"uri": f"s3://{bucket}/data/raw", "instance_groups": ["data"]},
                "train": {"uri": f"s3://{bucket}/data/train", "instance_groups": ["gpu"]},
            },
            "max_run": 3600,
        }
    )


def capacity_cluster(kind: str) -> dict[str, Any]:
    """A cluster on reserved capacity (``plan``), on ordered preferences (``preferences``), or
    on a p6e-gb200 UltraServer (``ultraserver``)."""
    if kind == "plan":
        return {
            "instance_type": "ml.p5.48xlarge",
            "instance_count": 2,
            "training_plan": TRAINING_PLAN,
            "volume_size": 500,
        }
    if kind == "preferences":
        return {
            "instance_preferences": [
                {
                    "instance_type": "ml.p5.48xlarge",
                    "instance_count": 2,
                    "training_plan": TRAINING_PLAN,
                },
                {"instance_type": "ml.p4d.24xlarge", "instance_count": 2},
            ]
        }
    return {
        "instance_type": "ml.p6e-gb200.36xlarge",
        "instance_count": 4,
        "training_plan": TRAINING_PLAN,
        "placement": {"ultraservers": [{"instance_count": 4}]},
    }
