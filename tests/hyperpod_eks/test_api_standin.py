"""submit, status, logs, stop and jobs of a hyperpod-eks job through the real ``kubernetes``
client, against the API stand-in (which validates what it receives) and a scripted operator;
runs where ``kubernetes``, ``sagemaker-hyperpod`` and ``kubernetes-validate`` are installed."""

from __future__ import annotations

import os
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
pytest.importorskip("kubernetes_validate", reason="needs kubernetes-validate")

from tests.hyperpod_eks.apiserver import ApiServer  # noqa: E402
from tests.hyperpod_eks.scripted_operator import ScriptedOperator  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def job_file(tmp_path: Path) -> Path:
    (tmp_path / "job.yaml").write_text((ROOT / "examples" / "pytorch_ddp.yaml").read_text())
    return tmp_path / "job.yaml"


def smdist(cwd: Path, kubeconfig: Path | None, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KUBECONFIG", None)
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", *args],
        cwd=cwd, capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip


def until(check, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_job_is_sent_followed_listed_and_read_back(job_file, tmp_path):
    with ApiServer(ScriptedOperator(lines=3, seconds=0.3)) as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        sent = smdist(tmp_path, kubeconfig, "submit", str(job_file), "--backend", "hyperpod-eks")
        assert sent.returncode == 0, sent.stderr
        name = sent.stdout.strip().splitlines()[-1]
        job = server.store.get("job", "training", name)
        assert job is not None and server.store.refused == []
        assert server.store.get("configmap", "training", f"{name}-code") is not None
        logs = smdist(tmp_path, kubeconfig, "logs", "-f", name, "--backend", "hyperpod-eks")
        assert logs.returncode == 0, logs.stderr
        assert f"{name}-pod-0 | step 2" in logs.stdout.splitlines()
        assert f"{name}-pod-1 | step 0" in logs.stdout.splitlines()
        status = smdist(tmp_path, kubeconfig, "status", name, "--backend", "hyperpod-eks")
        assert status.returncode == 0, status.stderr
        assert status.stdout.split("\t")[:2] == [name, "Completed"]
        assert f"pod {name}-pod-1: Succeeded on node-1" in status.stdout
        listed = smdist(tmp_path, kubeconfig, "jobs", "--backend", "hyperpod-eks")
        assert listed.returncode == 0, listed.stderr
        assert name in listed.stdout and "Completed" in listed.stdout


def test_stop_deletes_the_job_with_the_grace_period(job_file, tmp_path):
    operator = ScriptedOperator(lines=200, seconds=0.2)
    with ApiServer(operator) as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        sent = smdist(tmp_path, kubeconfig, "submit", str(job_file), "--backend", "hyperpod-eks")
        name = sent.stdout.strip().splitlines()[-1]
        until(lambda: server.store.listed("pod", "training", {"HPJob": name}))
        stopped = smdist(tmp_path, kubeconfig, "stop", name, "--backend", "hyperpod-eks")
        assert stopped.returncode == 0, stopped.stderr
        assert "SIGKILL after 30 s" in stopped.stderr + stopped.stdout
        assert operator.graces == {name: 30}
        assert server.store.get("job", "training", name) is None
        assert server.store.get("configmap", "training", f"{name}-code") is None


def test_a_failed_job_is_failed_with_the_operators_message(job_file, tmp_path):
    with ApiServer(ScriptedOperator(lines=1, seconds=0.1, fail=True)) as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        sent = smdist(
            tmp_path, kubeconfig, "submit", str(job_file), "--backend", "hyperpod-eks", "--wait"
        )
        assert sent.returncode == 1, sent.stderr
        name = sent.stdout.strip().splitlines()[0]
        status = smdist(tmp_path, kubeconfig, "status", name, "--backend", "hyperpod-eks")
        assert status.returncode == 1
        assert "condition: Failed: job failed" in status.stdout


def test_a_missing_kubeconfig_or_context_exits_2_naming_it(job_file, tmp_path):
    absent = smdist(tmp_path, tmp_path / "nowhere", "submit", str(job_file), "--backend",
                    "hyperpod-eks")  # fmt: skip
    assert absent.returncode == 2
    assert "kubeconfig: no kubeconfig file is there" in absent.stderr
    with ApiServer() as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        wrong = smdist(tmp_path, kubeconfig, "submit", str(job_file), "--backend",
                       "hyperpod-eks", "--context", "prod")  # fmt: skip
        assert wrong.returncode == 2
        assert "context: is no context of" in wrong.stderr and "valid: standin" in wrong.stderr
        assert server.store.objects == {}


def test_a_job_the_api_refuses_is_exit_2_with_its_answer_and_leaves_no_code_behind(tmp_path):
    import smdist
    from smdist.backends import registry
    from smdist.backends.hyperpod_eks.cluster import ClusterError
    from smdist.exit_codes import exit_code_for

    with ApiServer() as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        server.store.put("job", {"metadata": {"name": "taken", "namespace": "training"}})
        backend = registry.get("hyperpod-eks")
        options = backend.options({"kubeconfig": kubeconfig, "job_name": "taken"})
        spec = yaml.safe_load((ROOT / "examples" / "pytorch_ddp.yaml").read_text())
        value = backend.dry_run(smdist.plan(spec), options)
        with pytest.raises(ClusterError) as refused:
            backend.send(value, options)
        assert "409 AlreadyExists" in str(refused.value) or "409" in str(refused.value)
        assert exit_code_for(refused.value) == 2
        assert server.store.get("configmap", "training", "taken-code") is None


def test_the_client_watches_the_jobs_it_sent(job_file, tmp_path):
    from kubernetes import config, watch
    from kubernetes.client import CustomObjectsApi

    with ApiServer(ScriptedOperator(lines=1, seconds=0.1)) as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        sent = smdist(tmp_path, kubeconfig, "submit", str(job_file), "--backend", "hyperpod-eks")
        name = sent.stdout.strip().splitlines()[-1]
        api = CustomObjectsApi(config.new_client_from_config(config_file=str(kubeconfig)))
        seen = []
        stream = watch.Watch().stream(
            api.list_namespaced_custom_object, "sagemaker.amazonaws.com", "v1", "training",
            "hyperpodpytorchjobs", timeout_seconds=10,
        )  # fmt: skip
        for event in stream:
            conditions = (event["object"].get("status") or {}).get("conditions") or []
            seen += [c["type"] for c in conditions if c["status"] == "True"]
            if "Completed" in seen:
                break
        assert event["object"]["metadata"]["name"] == name
        assert seen[0] == "Created" and seen[-1] == "Completed"


def test_the_stand_in_refuses_what_the_hyperpod_models_refuse(tmp_path):
    from kubernetes import config
    from kubernetes.client import CustomObjectsApi
    from kubernetes.client.exceptions import ApiException

    with ApiServer() as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        api = CustomObjectsApi(config.new_client_from_config(config_file=str(kubeconfig)))
        body = {
            "apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob",
            "metadata": {"name": "bad", "namespace": "training"},
            "spec": {"nprocPerNode": "1", "replicaSpecs": [{"name": "pod", "replicas": 1,
                     "template": {"spec": {"containers": [{"name": "c", "image": "i",
                                                          "bogus": True}]}}}]},
        }  # fmt: skip
        with pytest.raises(ApiException) as refused:
            api.create_namespaced_custom_object(
                "sagemaker.amazonaws.com", "v1", "training", "hyperpodpytorchjobs", body
            )
        assert refused.value.status == 422 and "bogus" in refused.value.body
        assert server.store.get("job", "training", "bad") is None
