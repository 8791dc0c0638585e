"""Each strategy renders the SDK v2 distribution dict and the wire hyperparameters the SDK sends.

The expected wire values were captured from sagemaker 2.257.7's CreateTrainingJob requests.
"""

from __future__ import annotations

import json

import pytest

import smdist
from smdist import Cluster, JobSpec
from smdist.strategies import MWMS, SDDP, SDMP, Horovod, PyTorchDDP


def make_spec(strategy, instance_type="ml.p3.16xlarge", count=2, **extra) -> JobSpec:
    return JobSpec(
        name="job",
        strategy=strategy,
        cluster=Cluster(instance_type=instance_type, instance_count=count),
        region="us-west-2",
        **extra,
    )


def wire_distribution_part(plan) -> dict[str, str]:
    """Wire hyperparameters minus the user's, smdist's and the SDK's per-job five."""
    common = {
        "sagemaker_submit_directory",
        "sagemaker_program",
        "sagemaker_container_log_level",
        "sagemaker_job_name",
        "sagemaker_region",
        "model_dir",
    }
    return {
        k: v
        for k, v in plan.wire_hyperparameters.items()
        if k.startswith(("sagemaker_", "mp_parameters")) and k not in common
    }


def test_mpi_distribution_renders_processes_and_options():
    strategy = Horovod(processes_per_host=8, custom_mpi_options="-verbose -x NCCL_DEBUG=INFO")
    cluster = Cluster(instance_type="ml.p3.16xlarge", instance_count=2)
    assert strategy.distribution(cluster) == {
        "mpi": {
            "enabled": True,
            "processes_per_host": 8,
            "custom_mpi_options": "-verbose -x NCCL_DEBUG=INFO",
        }
    }
    plan = smdist.plan(make_spec(strategy))
    assert wire_distribution_part(plan) == {
        "sagemaker_mpi_enabled": "true",
        "sagemaker_mpi_num_of_processes_per_host": "8",
        "sagemaker_mpi_custom_mpi_options": '"-verbose -x NCCL_DEBUG=INFO"',
    }


def test_horovod_auto_processes_is_the_gpu_count():
    plan = smdist.plan(make_spec(Horovod(), "ml.g5.12xlarge"))
    assert plan.distribution["mpi"]["processes_per_host"] == 4
    assert plan.world_size == 8


def test_auto_processes_is_one_on_cpu_instances():
    plan = smdist.plan(make_spec(Horovod(), "ml.c5.2xlarge"))
    assert plan.topology.processes_per_host == 1


def test_torch_distributed_launcher_renders_its_distribution():
    plan = smdist.plan(make_spec(PyTorchDDP(launcher="torch_distributed"), "ml.p4d.24xlarge"))
    assert plan.distribution == {"torch_distributed": {"enabled": True}}
    assert wire_distribution_part(plan) == {
        "sagemaker_torch_distributed_enabled": "true",
        "sagemaker_instance_type": '"ml.p4d.24xlarge"',
    }
    assert plan.program == "pytorch_ddp.py"
    assert plan.world_size == 16


def test_torchrun_launcher_gets_the_script_and_its_settings_in_the_environment():
    spec = make_spec(
        PyTorchDDP(max_restarts=2),
        "ml.p3.2xlarge",
        code={"entry_point": "train.py", "source_dir": "/src"},
    )
    plan = smdist.plan(spec)
    assert plan.distribution == {}
    assert plan.program == "launch_torchrun.py"
    wire = plan.wire_hyperparameters
    assert wire["sagemaker_program"] == '"launch_torchrun.py"'
    assert not [name for name in wire if name.startswith("smdist")]
    assert plan.environment == {
        "SMDIST_TRAINING_SCRIPT": "train.py",
        "SMDIST_MAX_RESTARTS": "2",
        "SMDIST_BACKEND": "auto",
    }
    assert plan.estimator_kwargs["environment"] == plan.environment
    assert "sagemaker_torch_distributed_enabled" not in wire
    # The count is resolved in the plan (one per GPU of a p3.2xlarge): no "auto" ships.
    assert (plan.launch.processes_per_host, plan.launch.processes_follow_hardware) == (1, True)


def test_sddp_renders_dataparallel_with_instance_type():
    plan = smdist.plan(make_spec(SDDP(custom_mpi_options="-verbose"), "ml.p4d.24xlarge"))
    assert plan.distribution == {
        "smdistributed": {"dataparallel": {"enabled": True, "custom_mpi_options": "-verbose"}}
    }
    assert wire_distribution_part(plan) == {
        "sagemaker_distributed_dataparallel_enabled": "true",
        "sagemaker_instance_type": '"ml.p4d.24xlarge"',
        "sagemaker_distributed_dataparallel_custom_mpi_options": '"-verbose"',
    }
    assert plan.world_size == 16


def test_smp_v1_renders_modelparallel_and_mpi():
    strategy = SDMP(
        partitions=2,
        microbatches=8,
        placement_strategy="cluster",
        ddp=True,
        processes_per_host=8,
        custom_mpi_options="-verbose",
    )
    plan = smdist.plan(make_spec(strategy))
    assert plan.distribution == {
        "smdistributed": {
            "modelparallel": {
                "enabled": True,
                "parameters": {
                    "partitions": 2,
                    "microbatches": 8,
                    "pipeline": "interleaved",
                    "optimize": "speed",
                    "placement_strategy": "cluster",
                    "auto_partition": True,
                    "ddp": True,
                },
            }
        },
        "mpi": {"enabled": True, "processes_per_host": 8, "custom_mpi_options": "-verbose"},
    }
    assert wire_distribution_part(plan) == {
        "sagemaker_mpi_enabled": "true",
        "sagemaker_mpi_num_of_processes_per_host": "8",
        "sagemaker_mpi_custom_mpi_options": '"-verbose"',
        "mp_parameters": json.dumps(strategy.parameters()),
        "sagemaker_distributed_dataparallel_enabled": "false",
        "sagemaker_instance_type": '"ml.p3.16xlarge"',
    }


def test_smp_v2_renders_torch_distributed_and_modelparallel():
    strategy = SDMP(version=2, hybrid_shard_degree=2, tensor_parallel_degree=1)
    plan = smdist.plan(make_spec(strategy, "ml.p4d.24xlarge"))
    assert plan.distribution == {
        "torch_distributed": {"enabled": True},
        "smdistributed": {
            "modelparallel": {
                "enabled": True,
                "parameters": {"hybrid_shard_degree": 2, "tensor_parallel_degree": 1},
            }
        },
    }
    assert wire_distribution_part(plan) == {
        "mp_parameters": '{"hybrid_shard_degree": 2, "tensor_parallel_degree": 1}',
        "sagemaker_distributed_dataparallel_enabled": "false",
        "sagemaker_instance_type": '"ml.p4d.24xlarge"',
        "sagemaker_torch_distributed_enabled": "true",
    }


def test_mwms_renders_its_distribution_and_tf_model_dir():
    plan = smdist.plan(make_spec(MWMS(communication="RING"), "ml.p3.2xlarge"))
    assert plan.distribution == {"multi_worker_mirrored_strategy": {"enabled": True}}
    assert plan.wire_hyperparameters["sagemaker_multi_worker_mirrored_strategy_enabled"] == "true"
    assert plan.environment["SMDIST_COMMUNICATION"] == "ring"
    assert plan.wire_hyperparameters["model_dir"].endswith('/model"')
    assert plan.estimator == "sagemaker.tensorflow.TensorFlow"
    assert plan.world_size == 2


def test_user_hyperparameters_are_json_encoded_like_the_sdk():
    spec = make_spec(
        Horovod(),
        "ml.p3.2xlarge",
        hyperparameters={
            "epochs": 2,
            "lr": 0.1,
            "name": "x y",
            "flag": True,
            "lst": [1, 2],
            "d": {"a": 1},
        },
    )
    wire = smdist.plan(spec).wire_hyperparameters
    assert {k: wire[k] for k in ("epochs", "lr", "name", "flag", "lst", "d")} == {
        "epochs": "2",
        "lr": "0.1",
        "name": '"x y"',
        "flag": "true",
        "lst": "[1, 2]",
        "d": '{"a": 1}',
    }
    assert wire["sagemaker_container_log_level"] == "20"
    assert wire["sagemaker_region"] == '"us-west-2"'


def test_collective_timeout_travels_to_the_entry_point():
    plan = smdist.plan(make_spec(PyTorchDDP(collective_timeout=120), "ml.p3.2xlarge"))
    assert plan.environment["SMDIST_COLLECTIVE_TIMEOUT"] == "120"


def test_estimator_kwargs_carry_spot_network_checkpoint_and_tags():
    spec = make_spec(
        PyTorchDDP(),
        "ml.p3.2xlarge",
        role="arn:aws:iam::123456789012:role/SageMakerRole",
        checkpoint={"s3_uri": "s3://bucket-name/ckpt"},
        spot={"enabled": True, "max_wait": 7200},
        max_run=3600,
        network={
            "subnets": ["subnet-0123456789abcdef0"],
            "security_group_ids": ["sg-0123456789abcdef0"],
            "encrypt_inter_container_traffic": True,
        },
        tags={"team": "ml"},
    )
    kwargs = smdist.plan(spec).estimator_kwargs
    assert kwargs["use_spot_instances"] is True and kwargs["max_wait"] == 7200
    assert kwargs["checkpoint_s3_uri"] == "s3://bucket-name/ckpt"
    assert kwargs["subnets"] == ["subnet-0123456789abcdef0"]
    assert kwargs["encrypt_inter_container_traffic"] is True
    assert kwargs["tags"] == [{"Key": "team", "Value": "ml"}]
    assert kwargs["entry_point"] == "launch_torchrun.py"


def test_cost_uses_catalogue_price_times_instances():
    plan = smdist.plan(make_spec(Horovod(), "ml.p3.2xlarge", max_run=7200))
    info = Cluster(instance_type="ml.p3.2xlarge").info
    if info.price_per_hour is None:
        pytest.skip("catalogue has no price for ml.p3.2xlarge")
    assert plan.cost.per_hour == pytest.approx(2 * info.price_per_hour)
    assert plan.cost.max_run == pytest.approx(4 * info.price_per_hour)
