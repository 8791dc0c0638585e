"""The pod template of a HyperPodPyTorchJob: what every replica of the job runs.

One pod per node (``node.kubernetes.io/instance-type``, the label HyperPod's nodes carry and the
HyperPod CLI selects on), holding the node's accelerators and EFA interfaces. Its container runs
``hyperpodrun`` as PID 1, so that the kubelet's SIGTERM reaches it and it stops the workers with
SIGTERM, SIGKILL ``--grace`` seconds later, as SageMaker stops a job.

The job's folders are where SageMaker's container has them: ``/opt/ml/code`` the job's code,
unpacked by an init container from the job's ConfigMap (the packed ``source_dir`` and smdist's
runtime, the tarball a SageMaker job uploads); ``/opt/ml/model``, ``/opt/ml/checkpoints`` and
``/opt/ml/output/data`` folders of the job on the shared volume (``--pvc``), so that a pod the
operator restarts finds the checkpoints its predecessor wrote; ``/opt/ml/input/data/<channel>``
each channel's folder of that volume, read-only. Without ``--pvc`` they are the pod's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smdist.contract.host import CONTAINER_BASE

CONTAINER = "pytorch"
INIT_CONTAINER = "code"
CODE_DIR = str(CONTAINER_BASE / "code")
BUNDLE_DIR = str(CONTAINER_BASE / "bundle")
TARBALL_KEY = "sourcedir.tar.gz"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
DEEP_HEALTH_CHECK_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
MANAGED_BY = {"app.kubernetes.io/managed-by": "smdist"}
# The init container's program (its values are arguments): the packed code into the code folder.
UNPACK = (
    "import sys, tarfile; archive = tarfile.open(sys.argv[1]); "
    "archive.extractall(sys.argv[2], **({'filter': 'data'} if hasattr(tarfile, 'data_filter') "
    "else {}))"
)
_JOB_FOLDERS = ("model", "checkpoints", "output/data")


@dataclass(frozen=True)
class PodSettings:
    """What the pod template is made of (all rendered already)."""

    job_name: str
    image: str
    instance_type: str
    command: list[str]
    environment: dict[str, str]
    resources: dict[str, Any]
    code_config_map: str
    channels: dict[str, str]  # channel -> its folder, relative to the shared volume
    pvc: str | None
    shared_mount: str
    job_root: str
    grace: int
    labels: dict[str, str]
    deep_health_checked: bool = False
    service_account: str | None = None


def _volumes(settings: PodSettings) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = [
        {"name": "code", "emptyDir": {}},
        {"name": "bundle", "configMap": {"name": settings.code_config_map}},
        {"name": "shm", "emptyDir": {"medium": "Memory"}},
    ]
    if settings.pvc is not None:
        volumes.append({"name": "shared", "persistentVolumeClaim": {"claimName": settings.pvc}})
    else:
        volumes.append({"name": "job", "emptyDir": {}})
    return volumes


def _mounts(settings: PodSettings) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": "code", "mountPath": CODE_DIR},
        {"name": "shm", "mountPath": "/dev/shm"},
    ]
    volume = "job" if settings.pvc is None else "shared"
    base = "" if settings.pvc is None else f"{settings.job_root}/{settings.job_name}/"
    for relative in _JOB_FOLDERS:
        path = str(CONTAINER_BASE / relative)
        mounts.append({"name": volume, "mountPath": path, "subPath": base + relative})
    if settings.pvc is not None:
        mounts.append({"name": "shared", "mountPath": settings.shared_mount})
    for channel, relative in sorted(settings.channels.items()):
        path = str(CONTAINER_BASE / "input" / "data" / channel)
        mounts.append({"name": "shared", "mountPath": path, "subPath": relative, "readOnly": True})
    return mounts


def _init_container(settings: PodSettings) -> dict[str, Any]:
    return {
        "name": INIT_CONTAINER,
        "image": settings.image,
        "command": ["python", "-c", UNPACK, f"{BUNDLE_DIR}/{TARBALL_KEY}", CODE_DIR],
        "volumeMounts": [
            {"name": "bundle", "mountPath": BUNDLE_DIR, "readOnly": True},
            {"name": "code", "mountPath": CODE_DIR},
        ],
    }


def _container(settings: PodSettings) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": settings.image,
        "command": list(settings.command),
        "workingDir": CODE_DIR,
        "env": [{"name": name, "value": value} for name, value in settings.environment.items()],
        "volumeMounts": _mounts(settings),
    }
    if settings.resources:
        container["resources"] = settings.resources
    return container


def node_selector(settings: PodSettings) -> dict[str, str]:
    selector = {INSTANCE_TYPE_LABEL: settings.instance_type}
    if settings.deep_health_checked:
        selector[DEEP_HEALTH_CHECK_LABEL] = "Passed"
    return selector


def pod_template(settings: PodSettings) -> dict[str, Any]:
    """The ``template`` of the job's replica set."""
    spec: dict[str, Any] = {
        "initContainers": [_init_container(settings)],
        "containers": [_container(settings)],
        "volumes": _volumes(settings),
        "nodeSelector": node_selector(settings),
        "terminationGracePeriodSeconds": settings.grace,
    }
    if settings.service_account is not None:
        spec["serviceAccountName"] = settings.service_account
    return {"metadata": {"labels": dict(settings.labels)}, "spec": spec}
