"""The objects a hyperpod-eks job is, as the Kubernetes API takes them: the ``HyperPodPyTorchJob``
(``sagemaker.amazonaws.com/v1``, plural ``hyperpodpytorchjobs``) and the ConfigMap holding the
job's packed code, with the YAML that ``kubectl apply -f -`` takes.

The job's spec is the HyperPod training operator's: ``nprocPerNode`` (a string: the processes
hyperpodrun starts in every pod), one replica set (``replicaSpecs``: ``name``, ``replicas``,
``template``) and a ``runPolicy``: ``jobMaxRetryCount`` from the strategy's ``max_restarts``
(the operator restarts the job's pods after a failure, as torchrun restarts workers) and
``activeDeadlineSeconds`` from ``max_run`` (SageMaker's stopping condition), and
``cleanPodPolicy: None``, which keeps the pods of a finished job so that ``smdist logs`` reads
them, as the HyperPod CLI does when it sets a retry count.
"""

from __future__ import annotations

import base64
from typing import Any

import yaml

from smdist.backends.hyperpod_eks.pod import MANAGED_BY, TARBALL_KEY

GROUP = "sagemaker.amazonaws.com"
VERSION = "v1"
PLURAL = "hyperpodpytorchjobs"
KIND = "HyperPodPyTorchJob"
REPLICA = "pod"
# A ConfigMap's data (ConfigMap validation in Kubernetes: 1 MiB across its keys).
CONFIG_MAP_LIMIT = 1024 * 1024
CODE_CONFIG_MAP_SUFFIX = "-code"


def code_config_map_name(job_name: str) -> str:
    return job_name + CODE_CONFIG_MAP_SUFFIX


def metadata(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels)}


def code_config_map(job_name: str, namespace: str, tarball: bytes) -> dict[str, Any]:
    """The ConfigMap of the job's packed code (``binaryData``: base64, as the API takes it)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(code_config_map_name(job_name), namespace, MANAGED_BY),
        "binaryData": {TARBALL_KEY: base64.b64encode(tarball).decode("ascii")},
    }


def run_policy(max_restarts: int, max_run: int | None) -> dict[str, Any]:
    policy: dict[str, Any] = {"cleanPodPolicy": "None"}
    if max_restarts:
        policy["jobMaxRetryCount"] = max_restarts
    if max_run:
        policy["activeDeadlineSeconds"] = max_run
    return policy


def pytorch_job(
    job_name: str,
    namespace: str,
    *,
    labels: dict[str, str],
    replicas: int,
    processes_per_node: int,
    template: dict[str, Any],
    max_restarts: int,
    max_run: int | None = None,
) -> dict[str, Any]:
    """The ``HyperPodPyTorchJob`` of one replica set of ``replicas`` pods."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": metadata(job_name, namespace, labels),
        "spec": {
            "nprocPerNode": str(processes_per_node),
            "replicaSpecs": [{"name": REPLICA, "replicas": replicas, "template": template}],
            "runPolicy": run_policy(max_restarts, max_run),
        },
    }


def as_yaml(objects: list[dict[str, Any]]) -> str:
    """``objects`` as one YAML stream (``---`` between them), in the order they are created."""
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, width=1 << 16)
