"""What the HyperPod EKS test stand accepts: a HyperPodPyTorchJob the HyperPod SDK's own models
take (``sagemaker-hyperpod``: the models its ``HyperPodPytorchJob.get`` reads a job back with),
pod templates Kubernetes' own schema takes (``kubernetes-validate``, strict: no unknown field),
and ConfigMaps within the API's limits.

Each function returns the reasons an object is refused (none: accepted), as an API server's
422 would say them.
"""

from __future__ import annotations

from typing import Any

KUBERNETES_VERSION = "1.33"  # the schema the pod templates are held to (EKS's)
CONFIG_MAP_LIMIT = 1024 * 1024


def _kubernetes_errors(document: dict[str, Any]) -> list[str]:
    import kubernetes_validate

    try:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(part) for part in error.path)
        return [f"{document['kind']}: {path}: {error.message}"]
    return []


def pod_errors(template: dict[str, Any], name: str) -> list[str]:
    """A replica's ``template`` as the pod it makes (Kubernetes' Pod schema)."""
    metadata = {"name": name, **(template.get("metadata") or {})}
    return _kubernetes_errors(
        {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec")}
    )


def job_errors(body: dict[str, Any]) -> list[str]:
    """``body`` as the HyperPod SDK reads a HyperPodPyTorchJob back, and each of its pods."""
    from pydantic import ValidationError
    from sagemaker.hyperpod.training.config.hyperpod_pytorch_job_unified_config import (
        _HyperPodPytorchJob,
    )
    from sagemaker.hyperpod.training.hyperpod_pytorch_job import _load_hp_job

    errors = []
    if (body.get("apiVersion"), body.get("kind")) != (
        "sagemaker.amazonaws.com/v1",
        "HyperPodPyTorchJob",
    ):
        errors.append(f"not a HyperPodPyTorchJob: {body.get('apiVersion')} {body.get('kind')}")
    unknown = set(body.get("spec") or {}) - set(_HyperPodPytorchJob.model_fields)
    if unknown:  # the model ignores them; the operator's schema would not
        errors.append(f"spec: unknown fields {sorted(unknown)}")
    try:
        _load_hp_job(body)
    except (ValidationError, KeyError, TypeError) as error:
        errors.append(f"HyperPodPytorchJob: {error}")
        return errors
    for replica in body["spec"].get("replicaSpecs") or []:
        pod = f"{body['metadata']['name']}-{replica['name']}-0"
        errors += pod_errors(replica.get("template") or {}, pod)
    return errors


def config_map_errors(body: dict[str, Any]) -> list[str]:
    import base64

    errors = _kubernetes_errors(body)
    size = sum(len(base64.b64decode(v)) for v in (body.get("binaryData") or {}).values())
    size += sum(len(v.encode()) for v in (body.get("data") or {}).values())
    if size > CONFIG_MAP_LIMIT:
        errors.append(f"ConfigMap: data: {size} bytes, more than {CONFIG_MAP_LIMIT}")
    return errors
