"""The HyperPodPyTorchJob a spec becomes: the same job as on SageMaker (replicas, processes,
resources, fabric, image, script and arguments, the contract's variables), as YAML that
``kubectl apply -f -`` takes; nothing is sent by a dry run."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import smdist
from smdist.backends import registry
from smdist.backends.hyperpod_eks.options import HyperPodEksOptions
from smdist.backends.hyperpod_eks.resources import allocatable, pod_resources

ROOT = Path(__file__).resolve().parents[2]
BASE = {
    "name": "hp",
    "strategy": {"kind": "pytorch_ddp", "max_restarts": 2},
    "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
    "code": {"framework_version": "2.13.0", "py_version": "py312"},
    "hyperparameters": {"epochs": 3, "lr": 0.1},
}


def render(options: dict | None = None, **fields) -> tuple[dict, dict]:
    """(the ConfigMap, the HyperPodPyTorchJob) of the spec, from the dry run's YAML."""
    backend = registry.get("hyperpod-eks")
    chosen = backend.options({"job_name": "hp-1", **(options or {})})
    value = backend.dry_run(smdist.plan({**BASE, **fields}), chosen)
    config_map, job = yaml.safe_load_all(backend.show(value.plan, value)[0])
    return config_map, job


def container(job: dict) -> dict:
    return job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]


def env(job: dict) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container(job)["env"]}


def test_replicas_processes_and_restarts_come_from_the_plan():
    _, job = render()
    assert job["apiVersion"] == "sagemaker.amazonaws.com/v1"
    assert job["kind"] == "HyperPodPyTorchJob"
    assert job["metadata"] == {
        "name": "hp-1", "namespace": "default",
        "labels": {"app.kubernetes.io/managed-by": "smdist"},
    }  # fmt: skip
    spec = job["spec"]
    assert spec["nprocPerNode"] == "1"
    assert [(r["name"], r["replicas"]) for r in spec["replicaSpecs"]] == [("pod", 2)]
    assert spec["runPolicy"] == {
        "cleanPodPolicy": "None", "jobMaxRetryCount": 2, "activeDeadlineSeconds": 86400,
    }  # fmt: skip


def test_hyperpodrun_starts_the_training_script_with_the_hyperparameters_as_arguments():
    _, job = render()
    assert container(job)["command"] == [
        "hyperpodrun", "--nnodes=2", "--nproc-per-node=1", "--shutdown-signal=SIGTERM",
        "--shutdown-timeout=30", "/opt/ml/code/pytorch_ddp.py", "--epochs", "3", "--lr", "0.1",
    ]  # fmt: skip
    assert container(job)["workingDir"] == "/opt/ml/code"


def test_the_pod_carries_the_contracts_shared_variables_and_no_host_names():
    _, job = render()
    values = env(job)
    assert values["SM_MODEL_DIR"] == "/opt/ml/model"
    assert values["SM_HP_EPOCHS"] == "3" and values["SM_NUM_GPUS"] == "1"
    assert values["NNODES"] == "2" and values["TRAINING_JOB_NAME"] == "hp-1"
    assert values["SMDIST_CHECKPOINT_DIR"] == "/opt/ml/checkpoints"
    # the script hyperpodrun starts, not the launcher a training job's container would
    assert (values["SM_USER_ENTRY_POINT"], values["SM_MODULE_NAME"]) == (
        "pytorch_ddp.py", "pytorch_ddp",
    )  # fmt: skip
    for name in ("SM_HOSTS", "SM_CURRENT_HOST", "MASTER_ADDR", "RANK", "SM_TRAINING_ENV"):
        assert name not in values
    assert not any("algo-" in value for value in values.values())


def test_resources_and_node_selector_come_from_the_catalogue():
    _, job = render()
    pod = job["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "ml.g5.xlarge"}
    assert container(job)["resources"] == {
        "requests": {"cpu": "3", "memory": "11Gi", "nvidia.com/gpu": "1"},
        "limits": {"memory": "11Gi", "nvidia.com/gpu": "1"},
    }
    p5 = pod_resources("ml.p5.48xlarge")
    assert p5["limits"]["nvidia.com/gpu"] == "8" and p5["limits"]["vpc.amazonaws.com/efa"] == "32"
    assert "aws.amazon.com/neurondevice" in pod_resources("ml.trn1.32xlarge")["requests"]
    assert allocatable(4, 16) == (3, 11)


def test_an_efa_instance_gets_the_fabric_settings_of_the_catalogue():
    _, job = render(cluster={"instance_type": "ml.p4d.24xlarge", "instance_count": 2})
    values = env(job)
    assert values["FI_PROVIDER"] == "efa" and values["NCCL_PROTO"] == "simple"
    assert job["spec"]["nprocPerNode"] == "8"


def test_the_image_is_the_option_or_code_image_uri_or_the_resolved_dlc():
    _, job = render()
    assert container(job)["image"].endswith("/pytorch:2.13.0-cu133-amzn2023-sagemaker")
    _, job = render(code={**BASE["code"], "image_uri": "my.registry/train:1"})
    assert container(job)["image"] == "my.registry/train:1"
    _, job = render({"image": "other.registry/train:2"})
    assert container(job)["image"] == "other.registry/train:2"
    init = job["spec"]["replicaSpecs"][0]["template"]["spec"]["initContainers"][0]
    assert init["image"] == "other.registry/train:2"


def test_the_code_travels_in_a_config_map_that_the_init_container_unpacks():
    config_map, job = render()
    assert config_map["metadata"]["name"] == "hp-1-code"
    packed = base64.b64decode(config_map["binaryData"]["sourcedir.tar.gz"])
    names = tarfile.open(fileobj=io.BytesIO(packed)).getnames()
    assert "pytorch_ddp.py" in names and "smdist/launch.json" in names
    pod = job["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert {"name": "bundle", "configMap": {"name": "hp-1-code"}} in pod["volumes"]
    assert pod["initContainers"][0]["command"][-2:] == [
        "/opt/ml/bundle/sourcedir.tar.gz", "/opt/ml/code",
    ]  # fmt: skip


def test_a_pvc_holds_the_jobs_folders_and_its_channels():
    options = {"pvc": "fsx-claim", "queue": "team-a", "deep_health_checked": True}
    _, job = render(options, inputs={"training": "file:///fsx/data/train"})
    pod = job["spec"]["replicaSpecs"][0]["template"]["spec"]
    mounts = {m["mountPath"]: m for m in container(job)["volumeMounts"]}
    assert mounts["/opt/ml/checkpoints"] == {
        "name": "shared", "mountPath": "/opt/ml/checkpoints", "subPath": "smdist/hp-1/checkpoints",
    }  # fmt: skip
    assert mounts["/opt/ml/input/data/training"]["subPath"] == "data/train"
    assert mounts["/opt/ml/input/data/training"]["readOnly"] is True
    assert env(job)["SM_CHANNEL_TRAINING"] == "/opt/ml/input/data/training"
    claim = {"name": "shared", "persistentVolumeClaim": {"claimName": "fsx-claim"}}
    assert claim in pod["volumes"]
    assert pod["nodeSelector"]["sagemaker.amazonaws.com/deep-health-check-status"] == "Passed"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"


def test_the_command_line_dry_run_prints_yaml_and_sends_nothing(tmp_path):
    (tmp_path / "job.yaml").write_text((ROOT / "examples" / "pytorch_ddp.yaml").read_text())
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "submit", "job.yaml", "--backend",
         "hyperpod-eks", "--dry-run", "--kubeconfig", str(tmp_path / "none")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    kinds = [doc["kind"] for doc in yaml.safe_load_all(done.stdout)]
    assert kinds == ["ConfigMap", "HyperPodPyTorchJob"]
    assert "apply it with `kubectl apply -f -`" in done.stderr


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [("--namespace", "Team_A", "--namespace"), ("--pvc", "Bad Claim", "--pvc")],
)
def test_a_bad_option_exits_2_naming_it(tmp_path, flag, value, field):
    (tmp_path / "job.yaml").write_text((ROOT / "examples" / "pytorch_ddp.yaml").read_text())
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "submit", "job.yaml", "--backend",
         "hyperpod-eks", "--dry-run", flag, value],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert field in done.stderr


def test_the_options_model_is_the_backends():
    assert registry.get("hyperpod-eks").Options is HyperPodEksOptions


def test_a_dlc_whose_torch_the_elastic_agent_cannot_run_on_is_said():
    backend = registry.get("hyperpod-eks")
    value = backend.dry_run(smdist.plan(BASE), backend.options({"job_name": "hp-1"}))
    assert any("runs on torch < 2.12 only" in note for note in value.notes)
    given = backend.options({"job_name": "hp-1", "image": "mine/train:1"})
    value = backend.dry_run(smdist.plan(BASE), given)
    assert not any("torch < 2.12" in note for note in value.notes)
