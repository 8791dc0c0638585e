"""The SDK v3 request and smdist's v3 driver, without the SDK: what each strategy's job carries
and what the driver gives the script on a host (the conformance suite in tests/aws_v3 compares
the request with the one v3 sends)."""

from __future__ import annotations

import json
import sys

import pytest

from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.contract.commands import program_command
from smdist.contract.environment import input_data_config, resource_config
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.runtime import v3_driver
from smdist.spec.job import JobSpec

IMAGE = {"image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/training:1"}


def job(strategy: dict, instance_type: str = "ml.p4d.24xlarge", count: int = 2, **more):
    return plan(
        JobSpec.from_dict(
            {
                "name": "v3-unit",
                "strategy": strategy,
                "cluster": {"instance_type": instance_type, "instance_count": count},
                "code": IMAGE,
                "hyperparameters": {"epochs": 2, "note": "two words", "flag": True},
                **more,
            }
        )
    )


@pytest.mark.parametrize(
    ("strategy", "driver", "launcher"),
    [
        ({"kind": "pytorch_ddp"}, "torchrun_driver.py", None),
        ({"kind": "pytorch_ddp", "launcher": "torch_distributed"}, "torchrun_driver.py", None),
        ({"kind": "sdmp", "version": 2}, "torchrun_driver.py", None),
        ({"kind": "mwms"}, "smdist_driver.py", "tf_config"),
        ({"kind": "sddp"}, "smdist_driver.py", "smddp"),
        ({"kind": "sdmp", "version": 1, "partitions": 2}, "smdist_driver.py", "mpirun"),
        ({"kind": "horovod"}, "smdist_driver.py", "mpirun"),
    ],
)
def test_each_strategy_gets_the_driver_that_launches_it(strategy, driver, launcher):
    job_plan = job(strategy)
    config = v3_request.plan_driver_config(job_plan)
    assert config.script == driver
    assert config.settings.get("launcher") == launcher
    per_host = 1 if strategy["kind"] == "mwms" else 8  # p4d: 8 GPUs; MWMS: one per host
    assert config.settings["process_count_per_node"] == per_host  # always stated
    if launcher:
        toolkit = config.settings["toolkit_hyperparameters"]
        assert json.loads(toolkit["sagemaker_program"]).endswith(".py")
        assert all(key.startswith("sagemaker_") for key in toolkit)


def test_hyperparameters_are_the_users_encoded_for_the_toolkits_arguments_plus_mp_parameters():
    # v3's torchrun driver: what gives the script v2's `--epochs 2 --flag True --note two words`
    # (test_v3_hyperparameters has every kind of value).
    assert v3_request.hyperparameters(job({"kind": "pytorch_ddp"})) == {
        "epochs": "2",
        "flag": '"True"',
        "note": '"two words"',
    }
    smp1 = v3_request.hyperparameters(job({"kind": "sdmp", "version": 1, "partitions": 2}))
    assert json.loads(smp1["mp_parameters"])["partitions"] == 2
    smp2 = v3_request.hyperparameters(job({"kind": "sdmp", "version": 2, "hybrid_shard_degree": 8}))
    assert list(json.loads(smp2["mp_parameters"])) == [
        "hybrid_shard_degree",
        "tensor_parallel_degree",
    ]


def test_request_runs_sm_train_sh_from_content_addressed_channels():
    job_plan = job({"kind": "mwms"}, "ml.g5.xlarge")
    digest = v3_request.drivers_digest(
        job_plan, "3.27.0", "s3://b/smdist/source/abc/sourcedir.tar.gz"
    )
    assert digest == v3_request.drivers_digest(
        job_plan, "3.27.0", "s3://b/smdist/source/abc/sourcedir.tar.gz"
    )
    assert digest != v3_request.drivers_digest(
        job_plan, "3.28.0", "s3://b/smdist/source/abc/sourcedir.tar.gz"
    )
    submission = job_plan.bind(
        job_name="v3-unit-1", region="us-west-2", bucket="b", role="arn:aws:iam::1:role/r",
        code_uri="s3://b/smdist/source/abc/sourcedir.tar.gz",
    )  # fmt: skip
    request = v3_request.create_training_job_request(
        submission, image="img", drivers=v3_request.drivers_uri("b", digest),
        metric_definitions=[],
    )  # fmt: skip
    algorithm = request["AlgorithmSpecification"]
    assert algorithm["ContainerEntrypoint"] == ["/bin/bash"]
    assert algorithm["ContainerArguments"][1].endswith("/opt/ml/input/data/sm_drivers/sm_train.sh")
    assert [c["ChannelName"] for c in request["InputDataConfig"]] == ["code", "sm_drivers"]
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://b/", "CompressionType": "GZIP"}
    assert not [k for k in request["HyperParameters"] if k.startswith("sagemaker_")]


def test_driver_gives_the_script_the_toolkits_environment_and_arguments(tmp_path, monkeypatch):
    job_plan = job({"kind": "mwms"}, "ml.g5.xlarge")
    config = v3_request.plan_driver_config(job_plan)
    base = tmp_path / "opt" / "ml"
    config_dir = base / "input" / "config"
    config_dir.mkdir(parents=True)
    files = {
        "hyperparameters.json": v3_request.hyperparameters(job_plan),
        "resourceconfig.json": resource_config(
            ["algo-1", "algo-2"], "algo-2", "ml.g5.xlarge", "eth0"
        ),
        "inputdataconfig.json": input_data_config({"train": "FullyReplicated"}),
    }
    for name, content in files.items():
        (config_dir / name).write_text(json.dumps(content))
    monkeypatch.chdir(tmp_path)
    host = v3_driver.read_host_config(config_dir, config.settings["toolkit_hyperparameters"])
    launch = v3_driver.job_launch(config.settings, host)
    env = v3_driver.toolkit_environment(base, host, {"SM_NUM_GPUS": "1"}, "tensorflow", launch)
    assert env["SM_CURRENT_HOST"] == "algo-2" and json.loads(env["SM_HOSTS"]) == [
        "algo-1",
        "algo-2",
    ]
    # Exactly the user's hyperparameters, sorted and rendered as the toolkit renders them.
    assert json.loads(env["SM_USER_ARGS"]) == [
        "--epochs",
        "2",
        "--flag",
        "True",
        "--note",
        "two words",
    ]
    assert env["SM_CHANNEL_TRAIN"] == str(base / "input" / "data" / "train")
    assert json.loads(env["SM_FRAMEWORK_PARAMS"])[
        "sagemaker_multi_worker_mirrored_strategy_enabled"
    ]
    image = v3_driver.image_here({"PATH": ""}, None)
    assert program_command(image, "train.py", ["--epochs", "2"]) == [
        sys.executable,
        "--",
        "train.py",
        "--epochs",
        "2",
    ]
    assert program_command(image, "run.sh", ["a b"]) == ["./run.sh", "a b"]  # never a shell line


@pytest.mark.parametrize("value", ["it's", ["a'b"], {"k": "x'; touch /tmp/owned; echo '"}])
def test_a_single_quote_v3s_container_script_would_run_as_shell_is_refused(value):
    job_plan = plan(
        JobSpec.from_dict(
            {
                "name": "v3-quote",
                "strategy": {"kind": "pytorch_ddp"},
                "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
                "code": IMAGE,
                "hyperparameters": {"note": value, "epochs": 2},
            }
        )
    )
    with pytest.raises(SpecError) as raised:
        v3_request.hyperparameters(job_plan)
    (problem,) = raised.value.problems
    assert problem.path == "hyperparameters.note"
    assert "sm_train.sh" in problem.message
