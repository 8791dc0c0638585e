"""A HyperPod Slurm job as ``smdist status``, ``logs``, ``stop`` and ``jobs`` show it."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from smdist.backends.base import JobStatus
from smdist.backends.hyperpod_slurm.job import SlurmJob
from smdist.backends.hyperpod_slurm.records import names, read_record
from smdist.backends.job_rows import Row
from smdist.backends.views import BackendJobView, ReportEnd, Say


class SlurmJobView(BackendJobView):
    def __init__(self, job: SlurmJob) -> None:
        self.job, self.name = job, job.name

    def where(self, nodes: str) -> str:
        job = self.job
        count = job.record.get("nodes")
        on = nodes or f"{count} node(s)"
        return (
            f"hyperpod-slurm: Slurm job {job.slurm_job_id} on {on} ({job.head.where}), "
            f"folder {job.folder.path}"
        )

    def status_lines(self) -> list[str]:
        job = self.job
        status, described = job.state()
        nodes = described.nodes if described is not None else ""
        lines = [f"{job.name}\t{status}\t{self.where(nodes)}"]
        if described is not None and described.restarts:
            lines.append(f"requeued: {described.restarts} time(s); it resumes from its checkpoints")
        if status in (JobStatus.FAILED, JobStatus.STOPPED):
            lines.append(f"reason: {job.failure_reason}")
        if status is JobStatus.COMPLETED:
            lines.append(f"model: {job.model_artifacts}")
        lines.append(f"log: {job.log_path}")
        return lines

    def status_document(self) -> dict[str, Any]:
        job = self.job
        status, described = job.state()
        return {
            **job.record,
            "status": status.value,
            "slurm": asdict(described) if described is not None else None,
            "log": str(job.log_path),
            "failure_reason": job.failure_reason,
        }

    def stop(self, say: Say, *, wait: bool, poll: float, report_end: ReportEnd) -> None:
        job = self.job
        if not job.request_stop():
            say(f"{job.name}: already {job.status}; nothing to stop")
            return
        say(
            f"{job.name}: stop requested: SIGTERM to Slurm job {job.slurm_job_id}'s steps, "
            f"scancel if it still runs after {job.grace:g} s"
        )
        if not job.end_within(job.grace):
            say(f"{job.name}: still running {job.grace:g} s after SIGTERM: scancel")
            job.cancel()
        if wait:
            while not job.status.finished:
                time.sleep(min(poll, 1.0))
            report_end(job, job.status)


def find(name: str, root: Path) -> SlurmJobView | None:
    record = read_record(root, name)
    return None if record is None else SlurmJobView(SlurmJob(record))


def rows(root: Path) -> list[Row]:
    """``smdist jobs --backend hyperpod-slurm``: every job recorded here, newest first."""
    found = []
    for name in names(root):
        record = read_record(root, name)
        if record is None:
            continue
        job = SlurmJob(record)
        try:
            status = job.status.value
        except Exception as error:  # noqa: BLE001 - one unreachable cluster hides no other row
            status = f"unreadable: {error}"
        started = record.get("submitted")
        duration = time.time() - started if started and status == "InProgress" else None
        found.append(Row(name, "job", status, started, duration, "", str(job.folder.path)))
    return found
