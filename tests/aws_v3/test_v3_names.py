"""Channel and hyperparameter names SDK v3's container script cannot export, under SDK v3.

v3's ``scripts/environment.py`` writes ``export SM_CHANNEL_<NAME>='…'`` and ``export
SM_HP_<NAME>='…'`` and ``sm_train.sh`` sources them under ``set -e``: v3's own request with a
channel ``train-data`` or a hyperparameter ``lr.decay`` dies there, in the emulated container,
before any driver runs. So smdist refuses such names before any upload, and ``validate``,
``plan`` and ``submit --dry-run`` exit 2 naming them. (``lr-decay`` is fine: v3 exports it as
``SM_HP_LR_DECAY``; test_v3_hyperparameter_runs runs it.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from smdist.backends import sagemaker as backend
from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE
from .emulated_container import run_request
from .test_v3_runs import describe

# Real jobs: training frameworks run in emulated containers (`-m "not integration"` skips).
pytestmark = pytest.mark.integration

RAN = "THE-SCRIPT-RAN"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/any:1"
BAD_NAMES = [
    ("channel", "inputs.train-data", "SM_CHANNEL_TRAIN-DATA"),
    ("hyperparameter", "hyperparameters.lr.decay", "SM_HP_LR.DECAY"),
]


def source_dir(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text(f"print({RAN!r})\n")
    return source


@pytest.mark.parametrize(("kind", "field", "variable"), BAD_NAMES)
def test_v3s_own_job_with_such_a_name_ends_in_sm_train_sh_before_any_driver(
    kind, field, variable, boto_session, bucket, captured_requests, container_python, tmp_path
):
    from sagemaker.core.training.configs import Compute, InputData, OutputDataConfig, SourceCode
    from sagemaker.train import ModelTrainer

    s3 = boto_session.client("s3")
    s3.put_object(Bucket=BUCKET, Key="data/train/a.csv", Body=b"a")
    channel = "train-data" if kind == "channel" else "train"
    hyperparameters = {"lr.decay": 0.9} if kind == "hyperparameter" else {"epochs": 2}
    ModelTrainer(
        sagemaker_session=v3.sagemaker_session(boto_session, BUCKET),
        role=ROLE,
        base_job_name="v3-names",
        training_image=IMAGE,
        source_code=SourceCode(source_dir=str(source_dir(tmp_path)), entry_script="train.py"),
        compute=Compute(instance_type="ml.c5.xlarge", instance_count=1),
        output_data_config=OutputDataConfig(s3_output_path=f"s3://{BUCKET}/"),
        input_data_config=[
            InputData(channel_name=channel, data_source=f"s3://{BUCKET}/data/train")
        ],
        hyperparameters=hyperparameters,
    ).train(wait=False, logs=False)
    (request,) = captured_requests
    (result,) = run_request(
        request, s3, hosts=1, python=container_python, root=tmp_path / "hosts", timeout=120
    )
    assert result.returncode != 0, describe([result])
    assert f"{variable}=" in result.output and "not a valid identifier" in result.output
    assert "Running " not in result.output  # no driver started
    assert RAN not in result.output.replace(f"print({RAN!r})", "")


def spec_with_bad_names(tmp_path) -> JobSpec:
    return JobSpec.from_dict(
        {
            "name": "v3-names",
            "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun", "processes_per_host": 1},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 1},
            "code": {
                "entry_point": "train.py",
                "source_dir": str(source_dir(tmp_path)),
                "image_uri": IMAGE,
            },  # fmt: skip
            "inputs": {"train-data": f"s3://{BUCKET}/data/train"},
            "hyperparameters": {"lr.decay": 0.9, "lr-decay": 0.5},
        }
    )


def test_smdist_refuses_them_before_any_upload(boto_session, bucket, captured_requests, tmp_path):
    with pytest.raises(SpecError) as raised:
        backend.launch(
            plan(spec_with_bad_names(tmp_path)), bucket=BUCKET, role=ROLE,
            boto_session=boto_session,
        )  # fmt: skip
    problems = raised.value.problems
    assert [p.path for p in problems] == ["inputs.train-data", "hyperparameters.lr.decay"]
    assert [p.value for p in problems] == ["train-data", "lr.decay"]
    assert all("letters, digits" in p.valid for p in problems)
    assert captured_requests == []
    assert boto_session.client("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


@pytest.mark.parametrize("command", [["validate"], ["plan"], ["submit", "--dry-run"]])
def test_validate_plan_and_dry_run_exit_2_naming_them(command, tmp_path):
    source = source_dir(tmp_path)
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: v3-names\n"
        "strategy: {kind: pytorch_ddp, launcher: torchrun, processes_per_host: 1}\n"
        "cluster: {instance_type: ml.c5.xlarge, instance_count: 1}\n"
        f"code: {{entry_point: train.py, source_dir: '{source}', image_uri: '{IMAGE}'}}\n"
        f"inputs: {{train-data: 's3://{BUCKET}/data/train'}}\n"
        "hyperparameters: {lr.decay: 0.9}\n"
        f"role: {ROLE}\nregion: {REGION}\n"
    )
    # No endpoint and no credentials: none of these may need AWS.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SMDIST_BUCKET": BUCKET,
           "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", command[0], str(job), *command[1:]],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    said = " ".join(done.stderr.split())  # the console wraps long lines
    assert done.returncode == 2, done.stderr
    assert "inputs.train-data" in said and "hyperparameters.lr.decay" in said
    assert "SM_CHANNEL_TRAIN-DATA" in said and "not a valid identifier" in said
    assert "letters, digits and _" in said
