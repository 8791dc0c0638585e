"""The hyperpod-eks backend's options (``smdist submit``'s flags, ``fit(options=...)``).

Every value that reaches the cluster is checked here first: Kubernetes names are DNS labels
(RFC 1123: at most 63 lower-case letters, digits and '-', starting and ending alphanumeric), a
mount path is absolute, an image reference holds no blank or control character.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import Field, StrictBool, field_validator

from smdist.backends.options import BackendOptions, JobName, PollSeconds, Region

DNS_LABEL = re.compile(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
DNS_LABEL_VALID = "at most 63 lower-case letters, digits and '-', starting and ending with one"
# A DNS subdomain (RFC 1123): dot-separated DNS labels, at most 253 characters (PVC names).
DNS_SUBDOMAIN = re.compile(
    r"\A(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z"
)  # noqa: E501
DEFAULT_SHARED_MOUNT = "/fsx"
DEFAULT_JOB_ROOT = "smdist"
DEFAULT_GRACE = 30.0
DEFAULT_POLL_SECONDS = 5.0


def dns_label(value: str | None, what: str) -> str | None:
    """``value`` when it is a DNS label; ValueError saying what one is."""
    if value is not None and not DNS_LABEL.match(value):
        raise ValueError(f"{what} is a Kubernetes name: {DNS_LABEL_VALID}")
    return value


class HyperPodEksOptions(BackendOptions):
    """A HyperPodPyTorchJob on a SageMaker HyperPod EKS cluster."""

    kubeconfig: Annotated[
        Path | None,
        Field(description="the kubeconfig file to reach the cluster with (default: "
              "$KUBECONFIG, else ~/.kube/config); `aws eks update-kubeconfig` writes one"),
    ] = None  # fmt: skip
    context: Annotated[
        str | None,
        Field(description="the kubeconfig context of the HyperPod cluster (default: its "
              "current context)"),
    ] = None  # fmt: skip
    namespace: Annotated[
        str | None,
        Field(description="Kubernetes namespace of the job (default: the context's, else "
              "default)"),
    ] = None  # fmt: skip
    image: Annotated[
        str | None,
        Field(description="the training image, which must carry hyperpodrun "
              "(hyperpod-elastic-agent) (default: code.image_uri, else the Deep Learning "
              "Container the job resolves to)"),
    ] = None  # fmt: skip
    pvc: Annotated[
        str | None,
        Field(description="PersistentVolumeClaim of the shared file system (FSx for Lustre): "
              "model, checkpoints and output of every pod, kept across pod restarts (default: "
              "none; they last only as long as each pod)"),
    ] = None  # fmt: skip
    shared_mount: Annotated[
        str,
        Field(description="where the pods see the shared volume; file:// channels lie under it "
              f"(default: {DEFAULT_SHARED_MOUNT})"),
    ] = DEFAULT_SHARED_MOUNT  # fmt: skip
    job_root: Annotated[
        str,
        Field(description="folder of the shared volume holding each job's <job-root>/<job> "
              f"(default: {DEFAULT_JOB_ROOT})"),
    ] = DEFAULT_JOB_ROOT  # fmt: skip
    queue: Annotated[
        str | None, Field(description="Kueue queue of the job (kueue.x-k8s.io/queue-name)")
    ] = None
    priority: Annotated[
        str | None,
        Field(description="Kueue priority class of the job (kueue.x-k8s.io/priority-class)"),
    ] = None
    deep_health_checked: Annotated[
        StrictBool,
        Field(description="run only on nodes that passed HyperPod's deep health check"),
    ] = False
    service_account: Annotated[
        str | None, Field(description="Kubernetes service account of the pods")
    ] = None
    grace: Annotated[
        float,
        Field(gt=0, le=86400, allow_inf_nan=False,
              description="seconds from SIGTERM to SIGKILL when a pod is stopped"),
    ] = DEFAULT_GRACE  # fmt: skip
    region: Region = None
    poll_seconds: PollSeconds = DEFAULT_POLL_SECONDS
    job_name: JobName = None

    @field_validator("namespace", "queue", "job_name", "service_account", "priority")
    @classmethod
    def _label(cls, value: str | None) -> str | None:
        return dns_label(value, "the value")

    @field_validator("pvc")
    @classmethod
    def _claim(cls, value: str | None) -> str | None:
        if value is not None and not DNS_SUBDOMAIN.match(value):
            raise ValueError(
                "a PersistentVolumeClaim's name is lower-case letters, digits, '-' and '.'"
            )
        return value

    @field_validator("shared_mount")
    @classmethod
    def _mount(cls, value: str) -> str:
        if not value.startswith("/") or value.rstrip("/") in ("", "/opt/ml") or _odd(value):
            raise ValueError("an absolute path other than / and /opt/ml, such as /fsx")
        return value.rstrip("/")

    @field_validator("job_root")
    @classmethod
    def _job_root(cls, value: str) -> str:
        parts = value.strip("/").split("/")
        if value.startswith("/") or _odd(value) or any(p in ("", ".", "..") for p in parts):
            raise ValueError("a relative folder of the shared volume, such as smdist")
        return "/".join(parts)

    @field_validator("image", "context")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None and (not value or _odd(value) or value.startswith("-")):
            raise ValueError("a non-empty value without blanks or control characters")
        return value


def _odd(text: str) -> bool:
    """Whether ``text`` holds a blank or a control character."""
    return any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in text)
