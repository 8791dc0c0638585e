"""``smdist plan --hosts`` shows each host's container as the installed SDK line's request makes
it, and says which line that is: under SDK v2 the toolkit's (the TensorFlow estimator's
``--model_dir s3://...``, ``SM_MODULE_DIR`` the code's S3 tarball), under SDK v3 the driver's
(no ``model_dir`` hyperparameter, the code channel as ``SM_MODULE_DIR`` and working directory).
Each case runs the real command line in the interpreter of its line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import only

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CODE_CHANNEL = "/opt/ml/input/data/code"


def smdist(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", *args], capture_output=True, text=True, timeout=120
    )


def hosts_json(example: str) -> dict:
    done = smdist("plan", str(EXAMPLES / f"{example}.yaml"), "--hosts", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def request_hyperparameters(example: str) -> dict[str, str]:
    done = smdist("submit", str(EXAMPLES / f"{example}.yaml"), "--dry-run")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["CreateTrainingJob"]["HyperParameters"]


def test_the_hosts_view_names_the_installed_sdk_line(sdk_line):
    document = hosts_json("mwms")
    assert document["sdk"].startswith(f"{sdk_line} (sagemaker {sdk_line[1]}.")
    text = smdist("plan", str(EXAMPLES / "mwms.yaml"), "--hosts").stdout
    assert f"as SDK {sdk_line} (sagemaker {sdk_line[1]}." in text.splitlines()[1]


def test_model_dir_reaches_the_script_only_where_the_lines_request_carries_it(sdk_line):
    carried = "model_dir" in request_hyperparameters("mwms")
    assert carried == (sdk_line == "v2")  # the TensorFlow estimator adds it; v3 sends none
    for host in hosts_json("mwms")["hosts"]:
        assert ("--model_dir" in host["script_arguments"]) == carried
        assert ("SM_HP_MODEL_DIR" in host["environment"]) == carried
        assert ("--model_dir" in host["argv"]) == carried


@only("v2")  # the toolkit reads the code from S3; v3's case is the next test
def test_under_sdk_v2_the_module_dir_is_the_codes_s3_tarball():
    document = hosts_json("mwms")
    assert document["working_directory"] == "/opt/ml/code"
    for host in document["hosts"]:
        assert host["environment"]["SM_MODULE_DIR"].startswith("s3://")
        assert json.loads(host["environment"]["SM_CHANNELS"]) == []


@only("v3")  # v2 has no code or drivers channel: its toolkit downloads the code itself
def test_under_sdk_v3_smdists_driver_runs_the_script_from_the_code_channel():
    document = hosts_json("mwms")
    assert document["working_directory"] == CODE_CHANNEL
    assert document["driver"].startswith("smdist's driver (SmdistDriver)")
    for host in document["hosts"]:
        environment = host["environment"]
        assert environment["SM_MODULE_DIR"] == CODE_CHANNEL
        assert json.loads(environment["SM_CHANNELS"]) == ["code", "sm_drivers"]
        assert "s3://" not in json.dumps(environment)


@only("v3")  # v2's toolkit sets every SM_* the view shows
def test_under_sdk_v3s_torchrun_driver_the_toolkits_own_variables_are_not_shown():
    document = hosts_json("pytorch_ddp_torch_distributed")
    assert document["driver"].startswith("v3's Torchrun driver")
    assert "SM_MODULE_DIR" in document["toolkit_variables_not_set"]
    for host in document["hosts"]:
        assert not set(document["toolkit_variables_not_set"]) & set(host["environment"])
        assert host["argv"][0] == "torchrun"


@pytest.mark.parametrize("example", ["mwms", "pytorch_ddp_torch_distributed", "smp_v2"])
def test_the_hosts_hyperparameters_are_the_requests(sdk_line, example):
    sent = request_hyperparameters(example)
    users = {name for name in sent if not name.startswith("sagemaker_")}
    for host in hosts_json(example)["hosts"]:
        shown = {name[6:].lower() for name in host["environment"] if name.startswith("SM_HP_")}
        assert shown == users, (sdk_line, sorted(shown), sorted(users))
