"""What SDK v3's ModelTrainer would run in SageMaker actually trains, on 2 emulated hosts.

``trainer.train()`` uploads the code and v3's ``sm_drivers`` to the moto server and sends
CreateTrainingJob (captured on its way out); the emulated container (``emulated_container``)
then lays out each host's ``/opt/ml`` from that request and the uploaded objects and runs the
request's command verbatim in each host's own mount and UTS namespace. The image's python is
the main environment's interpreter (torch, TensorFlow): ``SMDIST_CONTAINER_PYTHON``, default
``<repo>/.venv/bin/python``.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path

import pytest

from smdist.backends.local.hosts.namespaced.switch import host_address
from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from . import emulated_container
from .conftest import BUCKET, REGION, ROLE
from .emulated_container import run_request, run_request_past_torch_exit_aborts
from .sdk_once import one_botocore_loader, sdk_config_schema_checked_once  # noqa: F401

# Real jobs: training frameworks run in emulated containers (`-m "not integration"` skips).
pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
REPORT = "RANK-REPORT "

DDP_SCRIPT = '''\
"""A user's DDP script: it knows nothing of smdist or the emulator."""
import argparse
import json
import os
import socket
import sys

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, required=True)
args = parser.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = 0.0
for _ in range(args.epochs):
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    total += value.item()
report = {"rank": rank, "world_size": world, "host": socket.gethostname(),
          "argv": sys.argv[1:], "sum": total}
print("RANK-REPORT " + json.dumps(report), flush=True)
if rank == 0:
    with open(os.path.join(os.environ["SM_MODEL_DIR"], "model.json"), "w") as out:
        json.dump(report, out)
dist.destroy_process_group()
'''


def reports(output: str) -> list[dict]:
    return [json.loads(line.split(REPORT, 1)[1]) for line in output.splitlines() if REPORT in line]


def describe(results) -> str:
    return "\n".join(f"--- {r.host} rc={r.returncode}\n{r.output[-4000:]}" for r in results)


def test_v3_torchrun_ddp_job_trains_on_two_emulated_hosts(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text(DDP_SCRIPT)
    spec = JobSpec.from_dict(
        {
            "name": "v3-runs-ddp",
            "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun", "processes_per_host": 1},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
            "code": {
                "entry_point": "train.py",
                "source_dir": str(source),
                "framework_version": "2.3.0",
                "py_version": "py311",
            },
            "hyperparameters": {"epochs": 2},
        }
    )
    trainer = v3.model_trainer(
        plan(spec), role=ROLE, bucket=BUCKET, region=REGION, session=boto_session
    )
    trainer.train(wait=False, logs=False)
    (request,) = captured_requests
    assert request["AlgorithmSpecification"]["ContainerEntrypoint"] == ["/bin/bash"]

    results = run_request_past_torch_exit_aborts(
        request, boto_session.client("s3"), hosts=2, python=container_python,
        root=tmp_path / "hosts", timeout=300,
        finished=lambda output: len(reports(output)) == 2,  # each rank reports at its end
    )  # fmt: skip

    assert [r.host for r in results] == ["algo-1", "algo-2"]
    assert [r.returncode for r in results] == [0, 0], describe(results)
    for index, result in enumerate(results):
        (report,) = reports(result.output)  # one rank per host, on its own host
        assert report["rank"] == index and report["host"] == result.host
        assert report["world_size"] == 2
        assert report["argv"] == ["--epochs", "2"]  # exactly the user's hyperparameters
        assert report["sum"] == 6.0  # (1 + 2) per all_reduce, 2 epochs
        # v3's driver ran torchrun with the static rendezvous on algo-1:7777.
        assert "--master_addr=algo-1" in result.output and "--master_port=7777" in result.output
        assert f"--node_rank={index}" in result.output
    model = json.loads((results[0].root / "model" / "model.json").read_text())
    assert model["world_size"] == 2 and model["host"] == "algo-1"
    assert not (results[1].root / "model" / "model.json").exists()


def shell_request(script: str, *, channels: list[dict] | None = None, **more) -> dict:
    """A CreateTrainingJob request whose container command is ``/bin/sh -c script``."""
    return {
        "TrainingJobName": "emulated-1",
        "AlgorithmSpecification": {
            "TrainingImage": "123456789012.dkr.ecr.us-west-2.amazonaws.com/any:1",
            "TrainingInputMode": "File",
            "ContainerEntrypoint": ["/bin/sh", "-c"],
            "ContainerArguments": [script],
        },
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 2},
        "InputDataConfig": channels or [],
        **more,
    }


def s3_channel(name: str, uri: str, distribution: str = "FullyReplicated") -> dict:
    source = {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": distribution}
    return {"ChannelName": name, "DataSource": {"S3DataSource": source}}


LOOK_AROUND = """
echo "host=$(hostname)"
echo "pid-1=$(cat /proc/1/comm) processes=$(ls -d /proc/[0-9]* | wc -l)"
for name in algo-1 algo-2; do echo "resolves $(getent hosts $name)"; done
cd /opt/ml && find . -type f | sort | sed 's/^/file=/'
env | sort | sed 's/^/env:/'
"""


def test_each_host_has_its_own_opt_ml_hostname_and_channels(namespaces, boto_session, bucket,
                                                             tmp_path, monkeypatch):  # fmt: skip
    s3 = boto_session.client("s3")
    objects = {
        "code/job/sourcedir.tar.gz": b"tarball",  # a URI naming one object
        "data/train/a.csv": b"a",
        "data/train/sub/b.csv": b"b",
        "data/other/c.csv": b"not under the train prefix",
        "shards/0.rec": b"0",
        "shards/1.rec": b"1",
        "shards/2.rec": b"2",
    }
    for key, body in objects.items():
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "must-not-leak")
    had_opt_ml, hostname = Path("/opt/ml").exists(), socket.gethostname()
    request = shell_request(
        LOOK_AROUND,
        channels=[
            s3_channel("code", f"s3://{BUCKET}/code/job/sourcedir.tar.gz"),
            s3_channel("train", f"s3://{BUCKET}/data/train"),
            s3_channel("shards", f"s3://{BUCKET}/shards/", "ShardedByS3Key"),
        ],
        HyperParameters={"epochs": "2"},
        Environment={"NCCL_DEBUG": "INFO"},
        CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt", "LocalPath": "/opt/ml/checkpoints"},
    )
    results = run_request(request, s3, python=sys.executable, root=tmp_path / "hosts", timeout=60)

    assert [r.returncode for r in results] == [0, 0], describe(results)
    shards = {"algo-1": ["0.rec", "2.rec"], "algo-2": ["1.rec"]}  # object i to host i mod 2
    for result in results:
        lines = result.stdout.splitlines()
        assert f"host={result.host}" in lines
        # Its own PID space: the command is PID 1; only its own few processes are seen.
        (pids,) = [line.split() for line in lines if line.startswith("pid-1=")]
        assert pids[0] in ("pid-1=sh", "pid-1=bash") and int(pids[1].split("=")[1]) < 10, pids
        resolved = [line.split()[1:] for line in lines if line.startswith("resolves ")]
        assert resolved == [[host_address(1), "algo-1"], [host_address(2), "algo-2"]]
        files = sorted(line[len("file=./") :] for line in lines if line.startswith("file="))
        assert files == sorted(
            [
                "input/config/hyperparameters.json",
                "input/config/inputdataconfig.json",
                "input/config/resourceconfig.json",
                "input/data/code/sourcedir.tar.gz",
                "input/data/train/a.csv",
                "input/data/train/sub/b.csv",
                *(f"input/data/shards/{name}" for name in shards[result.host]),
            ]
        )
        assert (result.root / "checkpoints").is_dir() and (result.root / "model").is_dir()
        env = dict(line[len("env:") :].split("=", 1) for line in lines if line.startswith("env:"))
        assert env["NCCL_DEBUG"] == "INFO" and env["TRAINING_JOB_NAME"] == "emulated-1"
        assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
        assert not [name for name in env if name.startswith("AWS_")]
        config = json.loads((result.root / "input/config/resourceconfig.json").read_text())
        assert config["current_host"] == result.host
        assert config["hosts"] == ["algo-1", "algo-2"]
        assert config["network_interface_name"] == "eth0"
        hps = json.loads((result.root / "input/config/hyperparameters.json").read_text())
        assert hps == {"epochs": "2"}
    # Nothing of a host's namespace shows outside it.
    assert Path("/opt/ml").exists() == had_opt_ml
    assert socket.gethostname() == hostname


@pytest.fixture
def short_kill_grace(monkeypatch) -> None:
    """The harness's SIGTERM-to-SIGKILL grace, shortened for a host whose command is a bare
    ``sleep`` as PID 1 of its namespace: it ignores SIGTERM (no handler), so the whole default
    grace (5 s) would be waited through before the SIGKILL that ends it."""
    monkeypatch.setattr(emulated_container, "KILL_GRACE", 0.5)


def test_a_failing_host_stops_the_others(namespaces, short_kill_grace, tmp_path):
    script = 'if [ "$(hostname)" = algo-2 ]; then exit 3; fi; exec sleep 600'
    results = run_request(shell_request(script), None, python=sys.executable,
                          root=tmp_path, timeout=120)  # fmt: skip
    assert results[1].returncode == 3 and not results[1].stopped
    assert results[0].stopped and results[0].returncode != 0 and not results[0].timed_out


def test_a_host_still_running_at_the_timeout_is_killed(namespaces, short_kill_grace, tmp_path):
    results = run_request(shell_request("exec sleep 600"), None, python=sys.executable,
                          root=tmp_path, hosts=1, timeout=1)  # fmt: skip
    assert results[0].timed_out and results[0].returncode is None


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed")
def test_ssh_stand_in_lets_mpirun_start_a_rank_on_each_host(namespaces, tmp_path):
    done = tmp_path / "done"
    # As on SageMaker, the other hosts wait while algo-1's mpirun starts ranks on them by ssh,
    # having published their environment first, as the MPI drivers do before sshd starts (a
    # session into a host that never publishes waits for it, up to a minute).
    script = """
if [ "$(hostname)" = algo-1 ]; then
  mpirun --allow-run-as-root --host algo-1,algo-2 -np 2 --tag-output sh -c \
    'echo "$(hostname) daemons=$(cat /proc/[0-9]*/comm | grep -c -x -e orted -e prted)"'
  status=$?; touch "$DONE"; exit $status
fi
echo "DONE=$DONE" >> /etc/environment
while [ ! -e "$DONE" ]; do sleep 0.2; done
"""
    request = shell_request(script, Environment={"DONE": str(done)})
    results = run_request(request, None, python=sys.executable, root=tmp_path / "hosts",
                          timeout=120)  # fmt: skip
    assert [r.returncode for r in results] == [0, 0], describe(results)
    ranks = sorted(line for line in results[0].stdout.splitlines() if "]<stdout>:" in line)
    # Each rank sees its own host's processes: mpirun's daemon runs on algo-2 only, as the
    # toolkit's workers (waiting for it to come and go) expect.
    assert ranks == ["[1,0]<stdout>:algo-1 daemons=0", "[1,1]<stdout>:algo-2 daemons=1"]


QUOTED = "x'; echo INJECTED-BY-VALUE; echo '"


def test_v3s_container_script_runs_a_quoted_hyperparameter_as_shell_smdist_refuses_it(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    """Why smdist refuses a ' in a hyperparameter under SDK v3: v3's own request, with such a
    value, runs the rest of it as shell code in every container (sm_train.sh sources
    ``export SM_HP_NOTE='<value>'``)."""
    from smdist.backends import sagemaker as backend
    from smdist.errors import SpecError

    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text("print('trained')\n")
    spec = JobSpec.from_dict(
        {
            "name": "v3-quote",
            "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun", "processes_per_host": 1},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 1},
            "code": {
                "entry_point": "train.py",
                "source_dir": str(source),
                "framework_version": "2.3.0",
                "py_version": "py311",
            },  # fmt: skip
            "hyperparameters": {"note": QUOTED},
        }
    )
    with pytest.raises(SpecError) as raised:
        backend.launch(plan(spec), bucket=BUCKET, role=ROLE, boto_session=boto_session)
    assert raised.value.problems[0].path == "hyperparameters.note"
    assert captured_requests == []
    assert boto_session.client("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0
    # v3 itself, given the value, takes it:
    from sagemaker.core.training.configs import Compute, OutputDataConfig, SourceCode
    from sagemaker.train import ModelTrainer

    ModelTrainer(
        sagemaker_session=v3.sagemaker_session(boto_session, BUCKET),
        role=ROLE,
        base_job_name="v3-quote",
        training_image="123456789012.dkr.ecr.us-west-2.amazonaws.com/any:1",
        source_code=SourceCode(source_dir=str(source), entry_script="train.py"),
        compute=Compute(instance_type="ml.c5.xlarge", instance_count=1),
        output_data_config=OutputDataConfig(s3_output_path=f"s3://{BUCKET}/"),
        hyperparameters={"note": QUOTED},
    ).train(wait=False, logs=False)
    (request,) = captured_requests
    (result,) = run_request(
        request, boto_session.client("s3"), hosts=1, python=container_python,
        root=tmp_path / "hosts", timeout=120,
    )  # fmt: skip
    assert "INJECTED-BY-VALUE" in result.stdout.replace("echo INJECTED-BY-VALUE", "")
