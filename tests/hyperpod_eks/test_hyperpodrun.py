"""The job smdist sends, run as the HyperPod training operator runs it: every pod an emulated
host running its container's command, the real ``hyperpodrun`` (hyperpod-elastic-agent), which
gets its rank from the operator stand-in; the job trains, restarts after a pod is killed and
resumes from its checkpoint. Needs the Linux namespaces the local backend's hosts use."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes", reason="needs the kubernetes client")
pytest.importorskip(
    "sagemaker.hyperpod.training.hyperpod_pytorch_job", reason="needs sagemaker-hyperpod"
)
pytest.importorskip("hyperpod_elastic_agent.run", reason="needs hyperpod-elastic-agent")
pytest.importorskip("torch", reason="needs torch")

from smdist.backends.local.hosts.namespaced.probe import namespace_support  # noqa: E402

SUPPORT = namespace_support()
pytestmark = pytest.mark.skipif(SUPPORT.mode is None, reason=f"no namespaces: {SUPPORT.problem}")

from tests.hyperpod_eks.apiserver import ApiServer  # noqa: E402
from tests.hyperpod_eks.host_operator import HostOperator, _signal_session  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPEC = {
    "name": "hp-ddp",
    "strategy": {"kind": "pytorch_ddp", "processes_per_host": 2},
    "cluster": {"instance_type": "ml.c5.2xlarge", "instance_count": 2},
    "code": {"framework_version": "2.13.0", "py_version": "py312"},
    "hyperparameters": {"epochs": 1, "batch_size": 32},
}


def smdist(cwd: Path, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KUBECONFIG": str(kubeconfig)}
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", *args],
        cwd=cwd, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


@pytest.fixture()
def stand(tmp_path: Path):
    shared = tmp_path / "fsx"
    shared.mkdir()
    operator = HostOperator(tmp_path / "pods", shared,
                            user_namespace=bool(SUPPORT.user_namespace))  # fmt: skip
    with ApiServer(operator) as server:
        yield server, operator, shared, server.kubeconfig(tmp_path / "kubeconfig")
        for name in list(operator.processes):
            operator.stopped.add(name)
        operator.join(30)


def submit(
    tmp_path: Path, kubeconfig: Path, spec: dict, *flags: str
) -> subprocess.CompletedProcess:
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    return smdist(
        tmp_path,
        kubeconfig,
        "submit",
        "job.yaml",
        "--backend",
        "hyperpod-eks",
        "--pvc",
        "fsx-claim",
        "--image",
        "stand-in/train:1",
        "--poll",
        "1",
        *flags,
    )


def test_two_pods_of_two_processes_train_through_hyperpodrun(stand, tmp_path):
    server, operator, shared, kubeconfig = stand
    sent = submit(tmp_path, kubeconfig, SPEC, "--wait")
    name = sent.stdout.strip().splitlines()[0]
    logs = smdist(tmp_path, kubeconfig, "logs", name, "--backend", "hyperpod-eks").stdout
    assert sent.returncode == 0, sent.stderr + logs
    assert f"{name}-pod-1 | " in logs and "Agent Version: 1.1.3" in logs
    assert (shared / "smdist" / name / "model" / "model.pt").is_file()
    status = smdist(tmp_path, kubeconfig, "status", name, "--backend", "hyperpod-eks").stdout
    assert status.split("\t")[:2] == [name, "Completed"]


SAGEMAKER_SCRIPT = '''"""Written for SageMaker: data, hyperparameters, model folder from SM_*."""
import argparse, json, os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--scale", type=float, default=1.0)
args, _ = parser.parse_known_args()
dist.init_process_group("gloo")
numbers = open(os.path.join(os.environ["SM_CHANNEL_TRAINING"], "numbers.txt")).read().split()
total = torch.tensor([args.scale * sum(float(n) for n in numbers)])
dist.all_reduce(total)
if dist.get_rank() == 0:
    with open(os.path.join(os.environ["SM_MODEL_DIR"], "total.json"), "w") as out:
        json.dump({"total": total.item(), "world": dist.get_world_size(),
                   "hps": json.loads(os.environ["SM_HPS"])}, out)
dist.destroy_process_group()
'''


def test_a_sagemaker_script_runs_unchanged_with_its_channel_on_the_shared_volume(stand, tmp_path):
    server, operator, shared, kubeconfig = stand
    (shared / "data" / "train").mkdir(parents=True)
    (shared / "data" / "train" / "numbers.txt").write_text("1 2 3\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SAGEMAKER_SCRIPT)
    spec = {
        **SPEC, "name": "hp-sm", "hyperparameters": {"scale": 2},
        "code": {**SPEC["code"], "source_dir": "src", "entry_point": "train.py"},
        # the shared volume's mount point is its folder here: smdist's checks read a file://
        # channel on this machine
        "inputs": {"training": f"file://{shared}/data/train"},
    }  # fmt: skip
    sent = submit(tmp_path, kubeconfig, spec, "--wait", "--shared-mount", str(shared))
    assert sent.returncode == 0, sent.stderr
    name = sent.stdout.strip().splitlines()[0]
    written = json.loads((shared / "smdist" / name / "model" / "total.json").read_text())
    assert written == {"total": 48.0, "world": 4, "hps": {"scale": 2}}


def test_a_pod_killed_mid_training_is_restarted_and_the_job_resumes(stand, tmp_path):
    server, operator, shared, kubeconfig = stand
    spec = {
        **SPEC, "name": "hp-kill",
        "strategy": {**SPEC["strategy"], "max_restarts": 1},
        "hyperparameters": {"epochs": 40, "batch_size": 32, "checkpoint_every": 5},
    }  # fmt: skip
    sent = submit(tmp_path, kubeconfig, spec)
    assert sent.returncode == 0, sent.stderr
    name = sent.stdout.strip().splitlines()[-1]
    checkpoints = shared / "smdist" / name / "checkpoints"
    deadline = time.monotonic() + 300
    while not (checkpoints.is_dir() and any(checkpoints.iterdir())):
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.5)
    killed = operator.processes[name][1]
    _signal_session(killed.pid, signal.SIGKILL)
    deadline = time.monotonic() + 400
    while True:
        status = smdist(tmp_path, kubeconfig, "status", name, "--backend", "hyperpod-eks").stdout
        if status.split("\t")[1] in ("Completed", "Failed"):
            break
        assert time.monotonic() < deadline, status
        time.sleep(2)
    logs = smdist(tmp_path, kubeconfig, "logs", name, "--backend", "hyperpod-eks").stdout
    assert status.split("\t")[1] == "Completed", status + logs[-3000:]
    assert "restarted: 1 time(s)" in status
    assert "resuming from checkpoint step=" in logs
