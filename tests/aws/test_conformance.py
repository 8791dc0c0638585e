"""The dry run is what runs: for every strategy, launcher and SMP version on several clusters,
the CreateTrainingJob request the SageMaker SDK actually sends (captured from boto3 on its way
to the moto server) equals the request ``smdist submit --dry-run`` shows for the same job."""

from __future__ import annotations

from typing import Any

import pytest

from smdist.backends import sagemaker as backend
from smdist.planning import plan
from smdist.spec import JobSpec

from .conftest import BUCKET, REGION, ROLE

COMPARED = (
    "HyperParameters",
    "ResourceConfig",
    "AlgorithmSpecification",
    "StoppingCondition",
    "CheckpointConfig",
    "VpcConfig",
    "EnableManagedSpotTraining",
)

PT = {"framework_version": "2.3.0", "py_version": "py311"}
TF = {"framework_version": "2.14", "py_version": "py310"}
SMDDP = {"framework_version": "2.2.0", "py_version": "py310"}
SMP1 = {"framework_version": "1.13.1", "py_version": "py39"}
SMP2 = {"framework_version": "2.3.1", "py_version": "py311"}
# The last training images that carry Horovod.
HOROVOD_PT = {"framework_version": "2.0.0", "py_version": "py310"}
HOROVOD_TF = {"framework_version": "2.12", "py_version": "py310"}

STRATEGIES: dict[str, tuple[dict[str, Any], dict[str, str], list[tuple[str, int]]]] = {
    "mwms": (
        {"kind": "mwms", "communication": "ring", "collective_timeout": 600},
        TF,
        [("ml.g5.xlarge", 2), ("ml.c5.2xlarge", 3)],
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


def submit_and_compare(spec: JobSpec, boto_session, captured: list[dict]) -> dict:
    job_plan = plan(spec)
    job = backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    assert len(captured) == 1
    sent = captured[0]
    shown = backend.dry_run(job_plan, bucket=BUCKET, role=ROLE, region=REGION, job_name=job.name)
    for key in COMPARED:
        assert sent.get(key) == shown.request.get(key), key
    # Not only the fields above: the whole request is the same.
    assert sent == shown.request
    assert shown.source_uri == job.source_uri
    return sent


@pytest.mark.parametrize(("name", "strategy", "code", "cluster"), CASES)
def test_sdk_request_equals_dry_run(name, strategy, code, cluster, boto_session, captured_requests):
    instance_type, count = cluster
    spec = JobSpec.from_dict(
        {
            "name": f"conf-{name}".replace("_", "-"),
            "strategy": strategy,
            "cluster": {"instance_type": instance_type, "instance_count": count},
            "code": code,
            "hyperparameters": {"epochs": 2, "note": "two words", "flag": True, "sizes": [1, 2]},
            "checkpoint": {"s3_uri": f"s3://{BUCKET}/checkpoints/{name}"},
            "max_run": 5400,
        }
    )
    sent = submit_and_compare(spec, boto_session, captured_requests)
    assert sent["ResourceConfig"]["InstanceCount"] == count
    assert sent["HyperParameters"]["sagemaker_program"].strip('"').endswith(".py")


def test_every_job_option_reaches_the_request(boto_session, captured_requests):
    spec = JobSpec.from_dict(
        {
            "name": "conf-options",
            "strategy": {"kind": "sddp"},
            "cluster": {"instance_type": "ml.p4d.24xlarge", "instance_count": 2},
            "code": SMDDP,
            "inputs": {
                "train": f"s3://{BUCKET}/data/train",
                "val": {
                    "uri": f"s3://{BUCKET}/data/val",
                    "distribution": "ShardedByS3Key",
                    "input_mode": "FastFile",
                },
            },
            "output_path": f"s3://{BUCKET}/models",
            "checkpoint": {"s3_uri": f"s3://{BUCKET}/ckpt", "local_path": "/opt/ml/ckpt"},
            "spot": {"enabled": True, "max_wait": 7200},
            "max_run": 3600,
            "network": {
                "subnets": ["subnet-0123456789abcdef0"],
                "security_group_ids": ["sg-0123456789abcdef0"],
                "isolation": True,
                "encrypt_inter_container_traffic": True,
            },
            "kms": {"volume_key_id": "alias/volume", "output_key_id": "alias/output"},
            "tags": {"team": "vision"},
            "environment": {"NCCL_DEBUG": "INFO"},
        }
    )
    sent = submit_and_compare(spec, boto_session, captured_requests)
    assert sent["EnableManagedSpotTraining"] is True
    assert sent["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    assert sent["VpcConfig"]["Subnets"] == ["subnet-0123456789abcdef0"]
    # Network isolation: the code travels as the "code" channel, not through S3 at run time.
    assert sent["HyperParameters"]["sagemaker_submit_directory"] == (
        '"/opt/ml/input/data/code/sourcedir.tar.gz"'
    )
    assert sent["InputDataConfig"][-1]["ChannelName"] == "code"


def test_warm_pool_and_image_uri(boto_session, captured_requests):
    image = "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-training:2.4"
    spec = JobSpec.from_dict(
        {
            "name": "conf-warm",
            "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
            "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
            "code": {"image_uri": image},
            "keep_alive": 1800,
        }
    )
    sent = submit_and_compare(spec, boto_session, captured_requests)
    assert sent["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800
    assert sent["AlgorithmSpecification"]["TrainingImage"] == image


def test_tensorflow_model_dir_follows_output_path(boto_session, captured_requests):
    spec = JobSpec.from_dict(
        {
            "name": "conf-tf-out",
            "strategy": {"kind": "mwms"},
            "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
            "code": TF,
            "output_path": f"s3://{BUCKET}/tf-models/",
        }
    )
    sent = submit_and_compare(spec, boto_session, captured_requests)
    name = sent["TrainingJobName"]
    assert sent["HyperParameters"]["model_dir"] == f'"s3://{BUCKET}/tf-models/{name}/model"'
