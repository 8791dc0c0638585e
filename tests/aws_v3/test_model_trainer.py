"""The SDK v3 ModelTrainer smdist configures sends the job the Plan describes.

For PyTorch DDP (both launchers), SMP v2 and Horovod (smdist's driver) on two clusters each, the
CreateTrainingJob
request that v3's ``ModelTrainer.train()`` sends (captured from boto3 on its way to the moto
server) carries the user's hyperparameters, smdist's environment, the cluster, the stopping
condition, the channels and the checkpoint config — and the launcher settings v3 writes into
its ``sm_drivers`` channel (read back from the moto server's S3) are the strategy's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.runtime.metrics import metric_definitions
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE
from .sdk_once import one_botocore_loader, sdk_config_schema_checked_once  # noqa: F401

DLC = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
TF_DLC = "763104351884.dkr.ecr.us-west-2.amazonaws.com/tensorflow-training:2.14.1-gpu-py310"
SMP_IMAGE = (
    "658645717510.dkr.ecr.us-west-2.amazonaws.com/smdistributed-modelparallel:2.3.1-gpu-py311-cu121"
)
HOROVOD_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/horovod-training:0.28.1"
PT = {"framework_version": "2.3.0", "py_version": "py311"}
SMP2 = {"framework_version": "2.3.1", "py_version": "py311"}
CLUSTERS = [("ml.g5.12xlarge", 2, 4), ("ml.p4d.24xlarge", 4, 8)]  # type, count, GPUs
SMP_CLUSTERS = [("ml.p4d.24xlarge", 2, 8), ("ml.p5.48xlarge", 2, 8)]  # where SMP v2 runs
USER_HPS = {"epochs": 2, "note": "two words", "flag": True, "sizes": [1, 2]}
# Encoded so that the script gets the toolkit's `--flag True` (v3_hyperparameters): through v3's
# Torchrun driver, which decodes each value twice, and through smdist's, which decodes it once.
USER_HPS_ON_WIRE = {
    "torchrun_driver.py": {
        "epochs": "2",
        "note": '"two words"',
        "flag": '"True"',
        "sizes": "[1, 2]",
    },
    "smdist_driver.py": {"epochs": "2", "note": '"two words"', "flag": "true", "sizes": "[1, 2]"},
}

# name -> (strategy, code, clusters, driver script, expected distributed.json given GPUs)
STRATEGIES: dict[str, tuple[dict[str, Any], dict[str, str], list, str, Any]] = {
    "ddp-torchrun": (
        {"kind": "pytorch_ddp", "launcher": "torchrun", "processes_per_host": 2},
        PT,
        CLUSTERS,
        "torchrun_driver.py",
        lambda gpus: {"process_count_per_node": 2, "smp": None},
    ),
    "ddp-torch_distributed": (
        {"kind": "pytorch_ddp", "launcher": "torch_distributed", "backend": "nccl"},
        PT,
        CLUSTERS,
        "torchrun_driver.py",
        lambda gpus: {"process_count_per_node": gpus, "smp": None},
    ),
    "smp-v2": (
        {"kind": "sdmp", "version": 2, "hybrid_shard_degree": 8, "sm_activation_offloading": True},
        SMP2,
        SMP_CLUSTERS,
        "torchrun_driver.py",
        lambda gpus: {
            "process_count_per_node": gpus,
            "smp": {
                "hybrid_shard_degree": 8,
                "sm_activation_offloading": True,
                "activation_loading_horizon": None,
                "fsdp_cache_flush_warnings": None,
                "allow_empty_shards": None,
                "tensor_parallel_degree": 1,
                "context_parallel_degree": None,
                "expert_parallel_degree": None,
                "random_seed": None,
            },
        },
    ),
    "horovod": (
        {"kind": "horovod", "custom_mpi_options": "-verbose -x NCCL_DEBUG=INFO"},
        {"image_uri": HOROVOD_IMAGE},
        CLUSTERS,
        "smdist_driver.py",
        lambda gpus: {
            "launcher": "mpirun",
            "process_count_per_node": gpus,
            "framework": "pytorch",
            "toolkit_hyperparameters": {
                "sagemaker_mpi_enabled": "true",
                "sagemaker_mpi_num_of_processes_per_host": str(gpus),
                "sagemaker_mpi_custom_mpi_options": '"-verbose -x NCCL_DEBUG=INFO"',
                "sagemaker_program": '"pytorch_horovod.py"',
            },
        },
    ),
}
CASES = [
    pytest.param(name, cluster, id=f"{name}-{cluster[0]}x{cluster[1]}")
    for name, (_, _, clusters, _, _) in STRATEGIES.items()
    for cluster in clusters
]


def job_spec(name: str, strategy: dict, code: dict, instance_type: str, count: int, **more):
    return JobSpec.from_dict(
        {
            "name": f"v3-{name}".replace("_", "-"),
            "strategy": {**strategy, "collective_timeout": 900},
            "cluster": {"instance_type": instance_type, "instance_count": count},
            "code": code,
            "inputs": {"train": f"s3://{BUCKET}/data/train"},
            "hyperparameters": USER_HPS,
            "environment": {"NCCL_DEBUG": "INFO"},
            "checkpoint": {"s3_uri": f"s3://{BUCKET}/checkpoints/{name}"},
            "max_run": 5400,
            **more,
        }
    )


def submit(job_plan, boto_session, captured: list[dict], **options) -> dict:
    trainer = v3.model_trainer(
        job_plan, role=ROLE, bucket=BUCKET, region=REGION, session=boto_session, **options
    )
    trainer.train(wait=False, logs=False)
    assert len(captured) == 1
    return captured[0]


def channel(request: dict, name: str) -> dict:
    (found,) = [c for c in request["InputDataConfig"] if c["ChannelName"] == name]
    return found


def read_s3(boto_session, uri: str) -> bytes:
    bucket, _, key = uri[len("s3://") :].partition("/")
    return boto_session.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()


@pytest.mark.parametrize(("name", "cluster"), CASES)
def test_request_carries_the_plan(name, cluster, boto_session, bucket, captured_requests):
    strategy, code, _, driver, distributed = STRATEGIES[name]
    instance_type, count, gpus = cluster
    job_plan = plan(job_spec(name, strategy, code, instance_type, count))
    sent = submit(job_plan, boto_session, captured_requests)

    assert sent["TrainingJobName"].startswith(job_plan.spec.name + "-")
    algorithm = sent["AlgorithmSpecification"]
    # Named by v3's own image tables unless the spec gives one.
    image = code.get("image_uri") or (SMP_IMAGE if name == "smp-v2" else DLC)
    assert algorithm["TrainingImage"] == image
    assert algorithm["TrainingInputMode"] == "File"
    assert algorithm["MetricDefinitions"] == metric_definitions()
    # v3 replaces the image's entrypoint with its own driver script.
    assert algorithm["ContainerEntrypoint"] == ["/bin/bash"]
    assert algorithm["ContainerArguments"][-1].endswith("/sm_drivers/sm_train.sh")

    hps = sent["HyperParameters"]
    extra = {k: v for k, v in hps.items() if k not in USER_HPS}
    assert {k: hps[k] for k in USER_HPS} == USER_HPS_ON_WIRE[driver]
    assert not [k for k in hps if k.startswith(("smdist", "sagemaker_"))]
    if name == "smp-v2":
        assert list(extra) == ["mp_parameters"]
        # The same settings smdist renders for the SDK v2 distribution.
        wire = json.loads(job_plan.wire_hyperparameters["mp_parameters"])
        assert json.loads(extra["mp_parameters"]) == wire
        assert wire == {"hybrid_shard_degree": 8, "tensor_parallel_degree": 1,
                        "sm_activation_offloading": True}  # fmt: skip
    else:
        assert extra == {}

    assert sent["Environment"] == job_plan.environment
    assert sent["Environment"]["NCCL_DEBUG"] == "INFO"
    assert sent["Environment"]["SMDIST_COLLECTIVE_TIMEOUT"] == "900"
    if name.startswith("ddp"):
        assert sent["Environment"]["SMDIST_BACKEND"] == strategy.get("backend", "auto")

    assert sent["ResourceConfig"] == {
        "InstanceType": instance_type,
        "InstanceCount": count,
        "VolumeSizeInGB": 30,
    }
    assert sent["StoppingCondition"] == {"MaxRuntimeInSeconds": 5400}
    assert sent["CheckpointConfig"] == {
        "S3Uri": f"s3://{BUCKET}/checkpoints/{name}",
        "LocalPath": "/opt/ml/checkpoints",
    }
    assert sent["OutputDataConfig"]["S3OutputPath"] == f"s3://{BUCKET}/"
    assert sent["RoleArn"] == ROLE
    for absent in ("EnableManagedSpotTraining", "VpcConfig", "EnableNetworkIsolation"):
        assert absent not in sent

    names = [c["ChannelName"] for c in sent["InputDataConfig"]]
    assert names == ["train", "code", "sm_drivers"]
    assert channel(sent, "train")["DataSource"]["S3DataSource"] == {
        "S3DataType": "S3Prefix",
        "S3Uri": f"s3://{BUCKET}/data/train",
        "S3DataDistributionType": "FullyReplicated",
    }
    # What v3's driver reads in the container: the launcher config and the script to run.
    drivers = channel(sent, "sm_drivers")["DataSource"]["S3DataSource"]["S3Uri"]
    written = json.loads(read_s3(boto_session, f"{drivers}/distributed.json"))
    if driver == "smdist_driver.py":  # how the runner starts the ranks, for smdist's driver
        assert written.pop("launch") == job_plan.launch.to_dict()
    assert written == distributed(gpus)
    source = json.loads(read_s3(boto_session, f"{drivers}/sourcecode.json"))
    assert source["entry_script"] == job_plan.entry_point
    assert driver in read_s3(boto_session, f"{drivers}/sm_train.sh").decode()
    code_uri = channel(sent, "code")["DataSource"]["S3DataSource"]["S3Uri"]
    script = read_s3(boto_session, f"{code_uri}/{job_plan.entry_point}")
    assert script.startswith(b'"""') or script.startswith(b"#")
    assert read_s3(boto_session, f"{code_uri}/smdist/runtime/__init__.py")


def test_every_job_option_reaches_the_request(boto_session, bucket, captured_requests):
    spec = job_spec(
        "options",
        {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        {"image_uri": DLC},
        "ml.p4d.24xlarge",
        2,
        inputs={
            "train": f"s3://{BUCKET}/data/train",
            "val": {
                "uri": f"s3://{BUCKET}/data/val",
                "distribution": "ShardedByS3Key",
                "input_mode": "FastFile",
            },
        },
        output_path=f"s3://{BUCKET}/models",
        checkpoint={"s3_uri": f"s3://{BUCKET}/ckpt", "local_path": "/opt/ml/ckpt"},
        spot={"enabled": True, "max_wait": 7200},
        max_run=3600,
        network={
            "subnets": ["subnet-0123456789abcdef0"],
            "security_group_ids": ["sg-0123456789abcdef0"],
            "isolation": True,
            "encrypt_inter_container_traffic": True,
        },
        kms={"output_key_id": "alias/output"},  # no volume key: p4d's storage is NVMe
        tags={"team": "vision"},
    )
    sent = submit(plan(spec), boto_session, captured_requests)
    assert sent["EnableManagedSpotTraining"] is True
    assert sent["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    assert sent["ResourceConfig"] == {
        "InstanceType": "ml.p4d.24xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 30,
    }
    assert sent["VpcConfig"] == {
        "SecurityGroupIds": ["sg-0123456789abcdef0"],
        "Subnets": ["subnet-0123456789abcdef0"],
    }
    assert sent["EnableNetworkIsolation"] is True
    assert sent["EnableInterContainerTrafficEncryption"] is True
    assert sent["OutputDataConfig"]["S3OutputPath"] == f"s3://{BUCKET}/models"
    assert sent["OutputDataConfig"]["KmsKeyId"] == "alias/output"
    assert sent["CheckpointConfig"] == {"S3Uri": f"s3://{BUCKET}/ckpt", "LocalPath": "/opt/ml/ckpt"}
    assert sent["Tags"] == [{"Key": "team", "Value": "vision"}]
    assert sent["AlgorithmSpecification"]["TrainingImage"] == DLC
    val = channel(sent, "val")
    assert val["InputMode"] == "FastFile"
    assert val["DataSource"]["S3DataSource"]["S3DataDistributionType"] == "ShardedByS3Key"


def test_warm_pool(boto_session, bucket, captured_requests):
    spec = job_spec("warm", {"kind": "horovod"}, {"image_uri": HOROVOD_IMAGE}, "ml.g5.12xlarge",
                    2, keep_alive=1800)  # fmt: skip
    sent = submit(plan(spec), boto_session, captured_requests)
    assert sent["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800
    assert "EnableManagedSpotTraining" not in sent


def test_code_already_in_s3_is_not_uploaded_again(
    boto_session, bucket, captured_requests, tmp_path
):
    from smdist.packaging import bundle as packaging

    job_plan = plan(
        job_spec("code-uri", {"kind": "pytorch_ddp"}, PT, "ml.g5.12xlarge", 2, inputs={})
    )
    package = packaging.pack(job_plan, tmp_path)
    code_uri = f"s3://{BUCKET}/smdist/source/{package.sha256}/sourcedir.tar.gz"
    boto_session.client("s3").upload_file(
        str(package.path), BUCKET, code_uri[len(f"s3://{BUCKET}/") :]
    )
    sent = submit(job_plan, boto_session, captured_requests, code_s3_uri=code_uri)
    assert [c["ChannelName"] for c in sent["InputDataConfig"]] == ["code", "sm_drivers"]
    assert channel(sent, "code")["DataSource"]["S3DataSource"]["S3Uri"] == code_uri
    listed = boto_session.client("s3").list_objects_v2(Bucket=BUCKET)["Contents"]
    assert not [o["Key"] for o in listed if "/input/code/" in o["Key"]]
    drivers = channel(sent, "sm_drivers")["DataSource"]["S3DataSource"]["S3Uri"]
    # v3's script unpacks a tarball source_dir in the code channel before it runs the driver.
    assert "tar -xzf sourcedir.tar.gz" in read_s3(boto_session, f"{drivers}/sm_train.sh").decode()


@pytest.mark.parametrize(
    ("strategy", "cluster", "launcher"),
    [
        ({"kind": "mwms"}, ("ml.g5.xlarge", 2), "tf_config"),
        ({"kind": "sddp"}, ("ml.p4d.24xlarge", 2), "smddp"),
        ({"kind": "sdmp", "version": 1, "partitions": 2}, ("ml.p4d.24xlarge", 2), "mpirun"),
        ({"kind": "horovod"}, ("ml.g5.12xlarge", 2), "mpirun"),
    ],
    ids=["mwms", "sddp", "smp-v1", "horovod"],
)
def test_strategies_v3_cannot_launch_get_smdists_driver(strategy, cluster, launcher, aws):
    spec = JobSpec.from_dict(
        {
            "name": "v3-driver",
            "strategy": strategy,
            "cluster": {"instance_type": cluster[0], "instance_count": cluster[1]},
            "code": {"image_uri": TF_DLC if strategy["kind"] == "mwms" else DLC},
        }
    )
    distributed = v3.model_trainer_distributed(plan(spec))
    assert type(distributed).__name__ == "SmdistDriver"
    assert distributed.driver_script == "smdist_driver.py"
    assert (Path(distributed.driver_dir) / "smdist_driver.py").is_file()
    assert distributed.launcher == launcher
    assert distributed.process_count_per_node == spec.strategy.resolve_processes_per_host(
        spec.cluster
    )


def test_torchrun_restarts_run_smdists_launcher_not_dropped(aws):
    spec = job_spec("restarts", {"kind": "pytorch_ddp", "max_restarts": 2}, PT, "ml.g5.12xlarge", 2)
    distributed = v3.model_trainer_distributed(plan(spec))
    # v3's Torchrun driver has no --max-restarts: smdist's launcher runs on every host instead.
    assert type(distributed).__name__ == "SmdistDriver"
    assert distributed.launcher == "program"
    program = json.loads(distributed.toolkit_hyperparameters["sagemaker_program"])
    assert program == "launch_torchrun.py"


def test_no_image_and_no_version_asks_for_a_version_carrying_the_library(aws):
    spec = job_spec("image", {"kind": "sdmp", "version": 2}, {}, "ml.p4d.24xlarge", 2)
    job_plan = plan(spec)  # planning needs no image (local runs have none): only a warning
    assert any("code.framework_version" in str(w) for w in job_plan.warnings)
    with pytest.raises(SpecError) as raised:
        v3.model_trainer(job_plan, role=ROLE, bucket=BUCKET, region=REGION)
    (problem,) = raised.value.problems
    assert problem.path == "code.framework_version"
    assert "is needed on SageMaker" in problem.message and "code.image_uri" in problem.valid


def test_distributed_objects_for_users_who_own_their_sdk_calls(aws):
    from sagemaker.train.distributed import Torchrun

    spec = job_spec("own", {"kind": "sdmp", "version": 2, "tensor_parallel_degree": 2}, SMP2,
                    "ml.p4d.24xlarge", 2)  # fmt: skip
    distributed = v3.model_trainer_distributed(plan(spec))
    assert isinstance(distributed, Torchrun)
    assert distributed.process_count_per_node == 8
    assert distributed.smp.tensor_parallel_degree == 2
    horovod = job_spec("own", {"kind": "horovod", "processes_per_host": 2}, {}, "ml.g5.12xlarge", 2)
    mpi = v3.model_trainer_distributed(plan(horovod))
    # Not v3's MPI: its driver passes the per-host count as -np, so ranks stay on one host.
    assert (mpi.launcher, mpi.process_count_per_node) == ("mpirun", 2)
    assert mpi.launch["custom_mpi_options"] == "" and len(mpi.launch["hosts"]) == 2


def test_each_strategy_offers_its_v3_object_as_it_offers_its_v2_distribution(aws):
    from sagemaker.train.distributed import Torchrun

    import smdist

    spec = job_spec(
        "own", {"kind": "pytorch_ddp", "processes_per_host": 2}, {}, "ml.g5.12xlarge", 2
    )
    distributed = v3.model_trainer_distributed(plan(spec))
    assert isinstance(distributed, Torchrun) and distributed.process_count_per_node == 2
    assert spec.strategy.distribution(spec.cluster) == {}  # the v2 side: smdist's launcher
    assert smdist.model_trainer is v3.model_trainer
    assert smdist.model_trainer_distributed is v3.model_trainer_distributed


@pytest.mark.parametrize(
    ("v3_value", "field", "strategy", "cluster"),
    [
        ("processes", "strategy.processes_per_host",
         {"kind": "pytorch_ddp", "processes_per_host": -1}, ("ml.g5.12xlarge", 2)),
        ("tensor_parallel", "strategy.tensor_parallel_degree",
         {"kind": "sdmp", "version": 2, "tensor_parallel_degree": 0}, ("ml.p4d.24xlarge", 2)),
        ("instances", "cluster.instance_count",
         {"kind": "pytorch_ddp"}, ("ml.g5.12xlarge", 0)),
    ],
)  # fmt: skip
def test_values_v3_accepts_are_refused_before_any_call(
    v3_value, field, strategy, cluster, boto_session, captured_requests
):
    from sagemaker.core.training.configs import Compute
    from sagemaker.train.distributed import SMP, Torchrun

    accepted_by_v3 = {
        "processes": lambda: Torchrun(process_count_per_node=-1),
        "tensor_parallel": lambda: SMP(tensor_parallel_degree=0),
        "instances": lambda: Compute(instance_type="ml.g5.12xlarge", instance_count=0),
    }
    accepted_by_v3[v3_value]()  # v3 itself takes the value without a word
    with pytest.raises(SpecError) as raised:
        JobSpec.from_dict(
            {
                "name": "v3-refused-values",
                "strategy": strategy,
                "cluster": {"instance_type": cluster[0], "instance_count": cluster[1]},
                "code": {"image_uri": DLC},
            }
        )
    assert field in {problem.path for problem in raised.value.problems}
    assert captured_requests == []
    assert boto_session.client("s3").list_buckets()["Buckets"] == []


# ---- the settings large jobs reach for --------------------------------------------------------
def test_the_settings_large_jobs_reach_for_are_carried(boto_session, bucket, captured_requests):
    from conformance_cases import MLFLOW_SERVER, file_system_settings, tracking_settings

    spec = job_spec(
        "settings", {"kind": "pytorch_ddp"}, PT, "ml.p3.2xlarge", 2,
        cluster={"instance_type": "ml.p3.2xlarge", "instance_count": 2, "volume_size": 300},
        **tracking_settings(BUCKET), **file_system_settings(BUCKET),
    )  # fmt: skip
    trainer = v3.model_trainer(
        plan(spec), role=ROLE, bucket=BUCKET, region=REGION, session=boto_session
    )
    # What a user inspects before train(): ModelTrainer's own settings.
    assert trainer.compute.volume_size_in_gb == 300
    assert trainer._retry_strategy.maximum_retry_attempts == 3
    assert trainer._infra_check_config.enable_infra_check is True
    assert trainer._remote_debug_config.enable_remote_debug is True
    assert trainer._tensorboard_output_config.s3_output_path == f"s3://{BUCKET}/tensorboard"
    assert trainer._mlflow_config.mlflow_experiment_name == "resnet"
    trainer.train(wait=False, logs=False)
    (sent,) = captured_requests
    assert sent["ResourceConfig"]["VolumeSizeInGB"] == 300
    assert sent["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert sent["InfraCheckConfig"] == {"EnableInfraCheck": True}
    assert sent["RemoteDebugConfig"] == {"EnableRemoteDebug": True}
    assert sent["TensorBoardOutputConfig"] == {
        "S3OutputPath": f"s3://{BUCKET}/tensorboard",
        "LocalPath": "/opt/ml/output/tensorboard",
    }
    expected = {"MlflowResourceArn": MLFLOW_SERVER, "MlflowExperimentName": "resnet",
                "MlflowRunName": "r1"}  # fmt: skip
    assert sent["MlflowConfig"] == expected
    lustre = channel(sent, "lustre")["DataSource"]["FileSystemDataSource"]
    assert (lustre["FileSystemType"], lustre["DirectoryPath"]) == (
        "FSxLustre",
        "/abcdefgh/imagenet",
    )
    shared = channel(sent, "shared")["DataSource"]["FileSystemDataSource"]
    assert (shared["FileSystemType"], shared["FileSystemAccessMode"]) == ("EFS", "rw")


def test_tensorboard_logs_go_under_each_jobs_own_name(boto_session, bucket, captured_requests):
    from smdist.backends import sagemaker as backend

    spec = job_spec("tensorboard", {"kind": "pytorch_ddp"}, PT, "ml.g5.12xlarge", 2,
                    tensorboard={})  # fmt: skip
    job_plan = plan(spec)
    sent = submit(job_plan, boto_session, captured_requests)
    name = sent["TrainingJobName"]
    assert name != spec.name  # v3 names the job when train() runs
    assert sent["TensorBoardOutputConfig"]["S3OutputPath"] == f"s3://{BUCKET}/{name}/tensorboard"
    shown = backend.dry_run(job_plan, bucket=BUCKET, role=ROLE, region=REGION, job_name="shown")
    assert shown.request["TensorBoardOutputConfig"]["S3OutputPath"] == (
        f"s3://{BUCKET}/shown/tensorboard"
    )


def test_a_heterogeneous_cluster_runs_smdists_driver_on_its_groups(
    boto_session, bucket, captured_requests
):
    from conformance_cases import heterogeneous_job

    job_plan = plan(heterogeneous_job("v3", BUCKET))
    distributed = v3.model_trainer_distributed(job_plan)
    # v3's Torchrun driver would start torchrun on the data group's host too.
    assert type(distributed).__name__ == "SmdistDriver"
    groups = distributed.toolkit_hyperparameters["sagemaker_distribution_instance_groups"]
    assert json.loads(groups) == ["gpu"]
    trainer = v3.model_trainer(job_plan, role=ROLE, bucket=BUCKET, region=REGION,
                               session=boto_session)  # fmt: skip
    # As v3's get_compute leaves them with groups: the type and count are the groups'.
    assert (trainer.compute.instance_type, trainer.compute.instance_count) == (None, None)
    assert [g.instance_group_name for g in trainer.compute.instance_groups] == ["data", "gpu"]
    trainer.train(wait=False, logs=False)
    (sent,) = captured_requests
    assert [g["InstanceGroupName"] for g in sent["ResourceConfig"]["InstanceGroups"]] == [
        "data", "gpu"
    ]  # fmt: skip
    assert "InstanceType" not in sent["ResourceConfig"]
    drivers = channel(sent, "sm_drivers")["DataSource"]["S3DataSource"]
    assert drivers["InstanceGroupNames"] == ["data", "gpu"]
    assert b"smdist_driver.py" in read_s3(boto_session, f"{drivers['S3Uri']}/sm_train.sh")


PREFERENCES = [
    {"instance_type": "ml.p5.48xlarge", "instance_count": 2},
    {"instance_type": "ml.p4d.24xlarge", "instance_count": 2},
]
ULTRASERVER = [{"instance_type": "ml.p6e-gb200.36xlarge", "instance_count": 4}]
PLACEMENT = {"ultraservers": [{"instance_count": 4}]}


def v3_compute(preferences: list[dict], **settings) -> Any:
    """v3's Compute for ``preferences`` and ``settings``, as a user would build it."""
    from sagemaker.core import shapes
    from sagemaker.core.training.configs import Compute

    return Compute(
        instance_preferences=[shapes.InstancePreference(**p) for p in preferences], **settings
    )


def placed(count: int) -> Any:
    from sagemaker.core import shapes

    return shapes.InstancePlacementConfig(
        placement_specifications=[shapes.PlacementSpecification(instance_count=count)]
    )


@pytest.mark.parametrize(
    ("field", "cluster", "more", "compute"),
    [
        ("spot.enabled", {"instance_preferences": PREFERENCES}, {"spot": {"enabled": True}},
         lambda: v3_compute(PREFERENCES, enable_managed_spot_training=True)),
        ("cluster.instance_preferences", {"instance_preferences": PREFERENCES * 2}, {},
         lambda: v3_compute(PREFERENCES * 2)),
        ("cluster.placement",
         {"instance_preferences": ULTRASERVER, "placement": PLACEMENT},
         {}, lambda: v3_compute(ULTRASERVER, instance_placement_config=placed(4))),
    ],
    ids=["spot", "repeated-type", "placement"],
)  # fmt: skip
def test_what_v3s_compute_refuses_is_a_problem_before_any_call(
    field, cluster, more, compute, boto_session, captured_requests
):
    with pytest.raises(ValueError, match="instance_preferences"):
        compute()  # v3 raises while the ModelTrainer is built: no field named
    spec = job_spec("refused", {"kind": "pytorch_ddp"}, PT, "ml.p5.48xlarge", 2,
                    cluster=cluster, **more)  # fmt: skip
    with pytest.raises(SpecError) as raised:
        v3.model_trainer(plan(spec), role=ROLE, bucket=BUCKET, region=REGION, session=boto_session)
    assert field in {problem.path for problem in raised.value.problems}
    assert captured_requests == []
    assert boto_session.client("s3").list_buckets()["Buckets"] == []
