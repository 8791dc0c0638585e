"""The cluster through the official ``kubernetes`` client, from the user's kubeconfig: the only
module of this backend that imports it (lazily, when a job is sent or looked at).

The kubeconfig and its context are checked first (``kubeconfig.target``: exit 2 naming the
option); the client then reads them as kubectl does, EKS's ``aws eks get-token`` exec
credentials included. The job's pods are those labelled ``HPJob=<job>`` (the training
operator's label, which the HyperPod CLI lists them by).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from smdist.backends.hyperpod_eks.kubeconfig import Target, target
from smdist.backends.hyperpod_eks.resource import GROUP, PLURAL, VERSION
from smdist.errors import NO_SUCH_JOB, OPTION, Problem, SetupError, SpecError

if TYPE_CHECKING:
    from smdist.backends.hyperpod_eks.options import HyperPodEksOptions

POD_LABEL = "HPJob"
CLIENT = "kubernetes>=33.1.0,!=36.0.0"  # 36.0.0 broke EKS's exec credentials


class ClusterError(SetupError):
    """The cluster refused or could not be reached (its answer, said as it came): exit 2."""


MISSING = object()  # what a call returns for a 404 it was told to expect


def _client() -> Any:
    try:
        import kubernetes  # lazy: this backend's client, only when a cluster is used
    except ImportError:
        problem = Problem(
            "backend", "needs the kubernetes client", "hyperpod-eks", f"pip install '{CLIENT}'"
        )
        raise SpecError([problem], OPTION) from None
    return kubernetes


def urllib3_errors() -> Any:
    import urllib3.exceptions  # lazy: the client's transport, loaded with it

    return urllib3.exceptions


class Cluster:
    """One namespace of the cluster a kubeconfig context names."""

    def __init__(self, where: Target) -> None:
        kubernetes = _client()
        self.where, self.namespace = where, where.namespace
        self.api = kubernetes.config.new_client_from_config(
            config_file=str(where.kubeconfig), context=where.context
        )
        self.core = kubernetes.client.CoreV1Api(self.api)
        self.custom = kubernetes.client.CustomObjectsApi(self.api)
        self.ApiException = kubernetes.client.exceptions.ApiException
        self.Unreachable = urllib3_errors().HTTPError

    @classmethod
    def of(cls, options: HyperPodEksOptions) -> Cluster:
        return cls(target(options.kubeconfig, options.context, options.namespace))

    def _call(self, doing: str, call: Any, *args: Any, missing: tuple[int, ...] = (),
              **keywords: Any) -> Any:  # fmt: skip
        """``call(*args, **keywords)``; MISSING for a status in ``missing``, ClusterError for
        any other refusal, or where the cluster cannot be reached."""
        try:
            return call(*args, **keywords)
        except self.ApiException as error:
            if error.status in missing:
                return MISSING
            reason = getattr(error, "reason", "") or ""
            raise ClusterError(
                f"{doing}: {error.status} {reason}: {_message(error)}".strip()
            ) from None
        except self.Unreachable as error:
            raise ClusterError(
                f"{doing}: cannot reach the cluster of context {self.where.context}: {error}"
            ) from None

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create ``body`` (a ConfigMap or the job) in its namespace."""
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        doing = f"creating {body['kind']} {namespace}/{name}"
        if body["kind"] == "ConfigMap":
            self._call(doing, self.core.create_namespaced_config_map, namespace, body)
            return body
        create = self.custom.create_namespaced_custom_object
        return self._call(doing, create, GROUP, VERSION, namespace, PLURAL, body)

    def job(self, name: str) -> dict[str, Any] | None:
        """The job ``name``, None when there is none."""
        found = self._call(
            f"reading job {self.namespace}/{name}", self.custom.get_namespaced_custom_object,
            GROUP, VERSION, self.namespace, PLURAL, name, missing=(404,),
        )  # fmt: skip
        return None if found is MISSING else found

    def jobs(self) -> list[dict[str, Any]]:
        found = self._call(
            f"listing jobs in {self.namespace}", self.custom.list_namespaced_custom_object,
            GROUP, VERSION, self.namespace, PLURAL,
        )  # fmt: skip
        return list(found.get("items") or [])

    def delete_job(self, name: str, grace: int) -> bool:
        """Delete the job and its code (``grace``: the pods' seconds from SIGTERM to SIGKILL);
        False when there was no such job."""
        body = {"gracePeriodSeconds": grace, "propagationPolicy": "Foreground"}
        done = self._call(
            f"deleting job {self.namespace}/{name}", self.custom.delete_namespaced_custom_object,
            GROUP, VERSION, self.namespace, PLURAL, name, body=body, missing=(404,),
        )  # fmt: skip
        self.delete_config_map(f"{name}-code")
        return done is not MISSING

    def delete_config_map(self, name: str) -> None:
        self._call(
            f"deleting ConfigMap {self.namespace}/{name}",
            self.core.delete_namespaced_config_map, name, self.namespace, missing=(404,),
        )  # fmt: skip

    def pods(self, job: str) -> list[Any]:
        """The job's pods, by name."""
        found = self._call(
            f"listing the pods of {job}", self.core.list_namespaced_pod, self.namespace,
            label_selector=f"{POD_LABEL}={job}",
        )  # fmt: skip
        return sorted(found.items, key=lambda pod: pod.metadata.name)

    def log_lines(self, pod: str, container: str, follow: bool) -> Iterator[str]:
        """The lines ``container`` of ``pod`` wrote (``follow``: until it ends)."""
        response = self._call(
            f"reading the log of {pod}", self.core.read_namespaced_pod_log, pod, self.namespace,
            container=container, follow=follow, _preload_content=False, missing=(400, 404),
        )  # fmt: skip
        if response is MISSING:  # not started yet, or gone
            return
        pending = b""
        try:
            for chunk in response.stream(4096, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", "replace")
            if pending:
                yield pending.decode("utf-8", "replace")
        finally:
            response.release_conn()


def _message(error: Any) -> str:
    try:
        return json.loads(error.body).get("message", "")
    except (TypeError, ValueError, AttributeError):
        return str(getattr(error, "body", "") or "")


def no_such_job(name: str, where: Target) -> SpecError:
    problem = Problem(
        "job_name",
        f"is no HyperPodPyTorchJob in namespace {where.namespace} of context {where.context}",
        name,
        "a name `kubectl get hyperpodpytorchjobs` lists (or --namespace / --context)",
    )
    return SpecError([problem], NO_SUCH_JOB)
