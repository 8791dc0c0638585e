"""A HyperPodPyTorchJob on the cluster as a ``Job``: its status from the resource's conditions,
its pods' logs, its stop.

The operator reports a job's state as conditions; its state is the type of the last one whose
status is "True", which is how the HyperPod CLI reads it (``sagemaker-hyperpod`` 3.12
``cli/commands/training.py``): ``Completed`` (or ``Succeeded``) and ``Failed`` end a job, a
deletion in progress is ``Stopping``, anything else (``Created``, ``Running``, ``Restarting``,
...) runs on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from smdist.backends.base import JobError, JobStatus
from smdist.backends.hyperpod_eks.cluster import Cluster, no_such_job
from smdist.backends.hyperpod_eks.pod import CONTAINER
from smdist.backends.log_lines import prefixed

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

_ENDED = {
    "Completed": JobStatus.COMPLETED,
    "Complete": JobStatus.COMPLETED,
    "Succeeded": JobStatus.COMPLETED,
    "Failed": JobStatus.FAILED,
}


def last_condition(resource: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (resource.get("status") or {}).get("conditions") or []
    true = [c for c in conditions if isinstance(c, dict) and c.get("status") == "True"]
    return true[-1] if true else None


def status_of(resource: dict[str, Any] | None) -> JobStatus:
    """The job's status from its resource (None: deleted, which is how a job is stopped)."""
    if resource is None:
        return JobStatus.STOPPED
    condition = last_condition(resource)
    ended = _ENDED.get(condition.get("type", "")) if condition else None
    if ended is not None:
        return ended
    if (resource.get("metadata") or {}).get("deletionTimestamp"):
        return JobStatus.STOPPING
    return JobStatus.IN_PROGRESS


class EksJob:
    """The job ``name`` of ``cluster``'s namespace."""

    backend = "hyperpod-eks"

    def __init__(self, cluster: Cluster, name: str, plan: Plan | None = None,
                 grace: int = 30, poll: float = 5.0) -> None:  # fmt: skip
        self.cluster, self.name, self.plan = cluster, name, plan
        self.namespace, self.grace, self.poll = cluster.namespace, grace, poll

    def resource(self) -> dict[str, Any] | None:
        return self.cluster.job(self.name)

    @property
    def status(self) -> JobStatus:
        return status_of(self.resource())

    @property
    def failure_reason(self) -> str | None:
        resource = self.resource()
        if resource is None:
            return "stopped: the job was deleted"
        condition = last_condition(resource)
        if status_of(resource) is not JobStatus.FAILED or condition is None:
            return None
        return condition.get("message") or condition.get("reason") or "failed"

    @property
    def model_artifacts(self) -> str | None:
        return None  # the model stays in the job's folder of the shared volume

    def pod_names(self) -> list[str]:
        return [pod.metadata.name for pod in self.cluster.pods(self.name)]

    def logs(self, follow: bool = False) -> Iterator[str]:
        """Every pod's lines, each prefixed with its pod; ``follow``: pod after pod, to the
        end of each (a pod's log ends when its container does)."""
        seen: set[str] = set()
        while True:
            pods = [name for name in self.pod_names() if name not in seen]
            width = max((len(name) for name in pods), default=0)
            for pod in pods:
                seen.add(pod)
                for line in self.cluster.log_lines(pod, CONTAINER, follow):
                    yield prefixed(pod, line, width)
            if not follow or self.status.finished:
                return
            time.sleep(self.poll)

    def wait(
        self, timeout: float | None = None, logs: bool = False, raise_on_failure: bool = False
    ) -> JobStatus:
        deadline = None if timeout is None else time.monotonic() + timeout
        if logs:
            for line in self.logs(follow=True):
                print(line, flush=True)
        status = self.status
        while not status.finished and (deadline is None or time.monotonic() < deadline):
            time.sleep(self.poll)
            status = self.status
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self.failure_reason)
        return status

    def stop(self) -> None:
        """Delete the job: its pods get SIGTERM, SIGKILL ``grace`` seconds later."""
        if not self.cluster.delete_job(self.name, self.grace):
            raise no_such_job(self.name, self.cluster.where)
