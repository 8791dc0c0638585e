"""A HyperPodPyTorchJob as ``smdist status``, ``logs``, ``stop`` and ``jobs`` show it."""

from __future__ import annotations

import calendar
import time
from typing import TYPE_CHECKING, Any

from smdist.backends.base import JobStatus
from smdist.backends.hyperpod_eks.cluster import Cluster, no_such_job
from smdist.backends.hyperpod_eks.job import EksJob, last_condition, status_of
from smdist.backends.hyperpod_eks.pod import MANAGED_BY
from smdist.backends.job_rows import Row
from smdist.backends.views import BackendJobView, ReportEnd, Say

if TYPE_CHECKING:
    from smdist.backends.hyperpod_eks.options import HyperPodEksOptions


def _pod_line(pod: Any) -> str:
    status = pod.status
    phase = getattr(status, "phase", None) or "Pending"
    restarts = sum(
        (c.restart_count or 0) for c in (getattr(status, "container_statuses", None) or [])
    )
    where = getattr(pod.spec, "node_name", None) or "not scheduled"
    return f"pod {pod.metadata.name}: {phase} on {where}" + (
        f", {restarts} restart(s)" if restarts else ""
    )


class EksJobView(BackendJobView):
    def __init__(self, job: EksJob, resource: dict[str, Any]) -> None:
        self.job, self.name, self.resource = job, job.name, resource

    def _where(self) -> str:
        cluster = self.job.cluster
        spec = self.resource.get("spec") or {}
        replicas = sum(r.get("replicas", 0) for r in spec.get("replicaSpecs") or [])
        return (
            f"hyperpod-eks: {replicas} pod(s) x {spec.get('nprocPerNode')} process(es) in "
            f"namespace {cluster.namespace} of context {cluster.where.context}"
        )

    def status_lines(self) -> list[str]:
        self.resource = self.job.resource() or self.resource
        status = status_of(self.resource)
        lines = [f"{self.name}\t{status}\t{self._where()}"]
        condition = last_condition(self.resource)
        if condition is not None:
            said = condition.get("message") or condition.get("reason") or ""
            lines.append(f"condition: {condition.get('type')}" + (f": {said}" if said else ""))
        restarts = (self.resource.get("status") or {}).get("restartCount")
        if restarts:
            lines.append(f"restarted: {restarts} time(s); it resumes from its checkpoints")
        lines += [_pod_line(pod) for pod in self.job.cluster.pods(self.name)]
        return lines

    def status_document(self) -> dict[str, Any]:
        self.resource = self.job.resource() or self.resource
        return {**self.resource, "smdist_status": status_of(self.resource).value}

    def stop(self, say: Say, *, wait: bool, poll: float, report_end: ReportEnd) -> None:
        job = self.job
        status = job.status
        if status.finished:
            say(f"{job.name}: already {status}; nothing to stop")
            return
        job.stop()
        say(
            f"{job.name}: deleted: its pods get SIGTERM, SIGKILL after {job.grace} s "
            "(the checkpoints on the shared volume stay)"
        )
        if wait:
            while job.pod_names():
                time.sleep(min(poll, 1.0))
            report_end(job, JobStatus.STOPPED)


def find(name: str, options: HyperPodEksOptions) -> EksJobView:
    cluster = Cluster.of(options)
    resource = cluster.job(name)
    if resource is None:
        raise no_such_job(name, cluster.where)
    job = EksJob(cluster, name, grace=int(options.grace), poll=options.poll_seconds)
    return EksJobView(job, resource)


def _started(resource: dict[str, Any]) -> float | None:
    stamp = (resource.get("metadata") or {}).get("creationTimestamp")
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except (TypeError, ValueError):
        return None


def rows(options: HyperPodEksOptions) -> list[Row]:
    """``smdist jobs --backend hyperpod-eks``: the namespace's jobs smdist sent, newest first."""
    cluster = Cluster.of(options)
    found = []
    for resource in cluster.jobs():
        labels = (resource.get("metadata") or {}).get("labels") or {}
        if any(labels.get(key) != value for key, value in MANAGED_BY.items()):
            continue
        status = status_of(resource)
        started = _started(resource)
        running = started is not None and not status.finished
        found.append(
            Row(
                resource["metadata"]["name"],
                "job",
                status.value,
                started,
                time.time() - started if running else None,
                "",
                cluster.namespace,
            )  # fmt: skip
        )
    return sorted(found, key=lambda row: row.started or 0.0, reverse=True)
