"""Under SDK v3 the script gets the hyperparameters SDK v2's toolkit gives it, and names v3's
container script cannot export are caught before anything is sent. No SDK needed: the toolkit's
answers are recorded (tests/fixtures/sagemaker_training_hyperparameters.json); the emulated
container runs of tests/aws_v3 (test_v3_hyperparameter_runs, test_v3_names) check the same with
v3's real drivers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.backends.sagemaker.v3 import hyperparameters as v3_hyperparameters
from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.contract.environment import input_data_config, resource_config
from smdist.planning.plan import plan
from smdist.runtime import v3_driver
from smdist.spec.job import JobSpec

REFERENCE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "sagemaker_training_hyperparameters.json"
)
RECORDED = json.loads(REFERENCE.read_text())
VALUES = RECORDED["hyperparameters"]
TOOLKIT_ARGV = RECORDED["argv"]
IMAGE = {"image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/training:1"}


def toolkit_argument(name: str) -> str:
    flag = TOOLKIT_ARGV.index(f"--{name}")
    return TOOLKIT_ARGV[flag + 1]


def job(strategy: dict, hyperparameters: dict, **more) -> object:
    return plan(
        JobSpec.from_dict(
            {
                "name": "v3-hps",
                "strategy": strategy,
                "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
                "code": IMAGE,
                "hyperparameters": hyperparameters,
                **more,
            }
        )
    )


@pytest.mark.parametrize("name", sorted(VALUES))
def test_smdists_rule_for_the_toolkits_argument_is_the_recorded_toolkits(name):
    assert v3_hyperparameters.toolkit_argument(VALUES[name]) == toolkit_argument(name)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_v3s_drivers_give_the_script_the_toolkits_argument(name):
    wire = v3_hyperparameters.for_v3_drivers(VALUES[name])
    assert v3_hyperparameters.v3_driver_argument(wire) == toolkit_argument(name)
    assert "'" not in wire  # sm_train.sh sources every value inside single quotes


def test_v3s_own_raw_strings_would_change_what_the_script_gets():
    """The defect: v3's safe_serialize sends a string as it is, and its drivers decode it."""
    raw = v3_hyperparameters.v3_driver_argument
    assert raw("1.10") == "1.1" and raw("1e3") == "1000.0" and raw("null") == "null"
    assert raw(json.dumps("1.10")) == "1.1"  # v2's encoding alone: decoded twice
    assert raw(v3_hyperparameters.for_v3_drivers("1.10")) == "1.10"


def test_values_stable_under_v3s_decoding_keep_v2s_encoding_so_sm_hps_is_v2s():
    for value in ("two words", "1.0", 3, 0.5, [64, 32], "true", "null", "[1, 2]", "0x10"):
        assert v3_hyperparameters.for_v3_drivers(value) == json.dumps(value)
    # The rest travel as the toolkit's text: SM_HPS then holds that text, not v2's value.
    assert v3_hyperparameters.for_v3_drivers(True) == '"True"'
    assert v3_hyperparameters.for_v3_drivers({"b": 2, "a": 1}) == '"a=1,b=2"'
    assert json.loads(json.loads(v3_hyperparameters.for_v3_drivers("1.10"))) == "1.10"


def test_request_carries_each_drivers_encoding_sorted_by_name():
    values = {"use_amp": True, "decimal_text": "1.10", "epochs": 3}
    torchrun = v3_request.hyperparameters(job({"kind": "pytorch_ddp"}, values))
    assert list(torchrun) == ["decimal_text", "epochs", "use_amp"]
    assert torchrun == {name: v3_hyperparameters.for_v3_drivers(v) for name, v in values.items()}
    smdist = v3_request.hyperparameters(job({"kind": "mwms"}, values))
    assert smdist == {name: json.dumps(value) for name, value in sorted(values.items())}


def test_smdists_driver_gives_the_script_the_toolkits_arguments_and_variables(
    tmp_path, monkeypatch
):
    job_plan = job({"kind": "mwms"}, VALUES)
    config = v3_request.plan_driver_config(job_plan)
    assert config.smdist
    base = tmp_path / "opt" / "ml"
    config_dir = base / "input" / "config"
    config_dir.mkdir(parents=True)
    files = {
        "hyperparameters.json": v3_request.hyperparameters(job_plan),
        "resourceconfig.json": resource_config(["algo-1"], "algo-1", "ml.g5.xlarge", "eth0"),
        "inputdataconfig.json": input_data_config({}),
    }
    for name, content in files.items():
        (config_dir / name).write_text(json.dumps(content))
    monkeypatch.chdir(tmp_path)
    host = v3_driver.read_host_config(config_dir, config.settings["toolkit_hyperparameters"])
    launch = v3_driver.job_launch(config.settings, host)
    env = v3_driver.toolkit_environment(base, host, {}, "tensorflow", launch)
    assert json.loads(env["SM_USER_ARGS"]) == TOOLKIT_ARGV
    assert env["SM_HPS"] == RECORDED["SM_HPS"]
    assert {k: env[k] for k in RECORDED["SM_HP"]} == RECORDED["SM_HP"]


# ---- names v3's container script cannot export ---------------------------------------------
CHANNELS = {"train-data": "s3://bucket/train", "val.v2": "s3://bucket/val", "ok_1": "s3://bucket/x"}
HYPERPARAMETERS = {"lr.decay": 0.9, "lr-decay": 0.5, "epochs": 2}


def test_names_v3_cannot_export_are_refused_for_v3_naming_field_value_and_what_is_valid():
    problems = v3_request.carriage_problems(
        job({"kind": "pytorch_ddp"}, HYPERPARAMETERS, inputs=CHANNELS)
    )
    assert [p.path for p in problems] == [
        "inputs.train-data",
        "inputs.val.v2",
        "hyperparameters.lr.decay",
    ]  # lr-decay is fine: v3 writes SM_HP_LR_DECAY
    channel, _, hyperparameter = problems
    assert channel.value == "train-data" and channel.severity == "error"
    assert (
        "SM_CHANNEL_TRAIN-DATA" in channel.message and "not a valid identifier" in channel.message
    )
    assert channel.valid.startswith("letters, digits and _") and "train_data" in channel.valid
    assert hyperparameter.value == "lr.decay" and "SM_HP_LR.DECAY" in hyperparameter.message
    assert "lr_decay" in hyperparameter.valid


def test_the_plan_warns_about_them_whatever_sdk_is_installed():
    warnings = job({"kind": "pytorch_ddp"}, HYPERPARAMETERS, inputs=CHANNELS).warnings
    found = [w for w in warnings if "SDK v3 cannot run this name" in w.message]
    assert [w.path for w in found] == [
        "inputs.train-data",
        "inputs.val.v2",
        "hyperparameters.lr.decay",
    ]
    assert all(w.severity == "warning" for w in found)


def test_validate_under_sdk_v2_only_warns_about_them(tmp_path):
    from smdist.backends.sagemaker import sdk_v3_installed

    if sdk_v3_installed():
        pytest.skip("SDK v3 is installed: tests/aws_v3/test_v3_names.py covers that line")
    job_file = tmp_path / "job.yaml"
    job_file.write_text(
        "name: names\nstrategy: {kind: pytorch_ddp}\n"
        "cluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n"
        "code: {framework_version: '2.3.0', py_version: py311}\n"
        "inputs: {train-data: 's3://bucket/train'}\n"
        "hyperparameters: {lr.decay: 0.9}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(job_file)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())  # the console wraps long lines
    assert "warning: inputs.train-data:" in said and "hyperparameters.lr.decay:" in said
    assert said.count("SDK v3 cannot run this name") == 2


# ---- the recorded toolkit, recorded again --------------------------------------------------
RECORD = """
import json, sys
from sagemaker_training import environment
env = environment.Environment()
variables = env.to_env_vars()
print(json.dumps({"argv": env.to_cmd_args(), "SM_HPS": variables["SM_HPS"],
                  "SM_HP": {k: v for k, v in variables.items() if k.startswith("SM_HP_")}}))
"""


def test_the_recording_is_what_the_toolkit_says(tmp_path):
    """With SMDIST_TOOLKIT_PYTHON naming a Python that has sagemaker-training (e.g. a side
    venv: ``pip install sagemaker-training==5.1.4``), the fixture is recorded again and must be
    what the toolkit gives for SDK v2's encoding of the same values."""
    python = os.environ.get("SMDIST_TOOLKIT_PYTHON")
    if not python:
        pytest.skip("SMDIST_TOOLKIT_PYTHON is not set (a Python with sagemaker-training)")
    config = tmp_path / "opt" / "ml" / "input" / "config"
    config.mkdir(parents=True)
    wire = {name: json.dumps(value) for name, value in VALUES.items()}  # as SDK v2 sends them
    (config / "hyperparameters.json").write_text(json.dumps(wire))
    (config / "resourceconfig.json").write_text(
        json.dumps(resource_config(["algo-1"], "algo-1", "ml.c5.xlarge", "eth0"))
    )
    (config / "inputdataconfig.json").write_text("{}")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SAGEMAKER_BASE_DIR": str(tmp_path / "opt" / "ml"),
        "SM_STUDIO_LOCAL_MODE": "true",  # else it waits for DNS of every host
        "HOME": str(tmp_path),
    }
    done = subprocess.run([python, "-c", RECORD], capture_output=True, text=True, env=env,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout.strip().splitlines()[-1])
    assert again == {key: RECORDED[key] for key in ("argv", "SM_HPS", "SM_HP")}
