"""A local job's ``job.json``: what ``smdist status``, ``logs``, ``stop`` and ``jobs`` read of it
from any process (``backends.job_records``), written when it starts and when it ends."""

from __future__ import annotations

import json
from typing import Any

from smdist.backends.job_records import RECORD, process_identity
from smdist.backends.safe_files import write_record


def job_record(job: Any, final: bool) -> dict[str, Any]:
    """``job``'s record now; ``final``: its end (the status it ended with)."""
    return {
        "name": job.name,
        "backend": job.backend,
        "status": (job.final_status if final else job.status).value,
        "failure_reason": job.failure_reason,
        "model_artifacts": job.model_artifacts,
        "hosts": job.host_names,
        "processes_per_host": job.layout.processes_per_host if job.layout else None,
        "exit_codes": job.exit_codes,
        "job_dir": str(job.job_dir),
        "log": str(job.log.path) if job.log else None,
        "supervisor": process_identity(),  # [pid, start]: is it running?
        "started": job.started_at,
    }


def write_job_record(job: Any, final: bool = False) -> None:
    if job.job_dir.is_dir():  # never half written, never through a link placed there
        write_record(job.job_dir / RECORD, json.dumps(job_record(job, final), indent=1) + "\n")


def write_final_record(job: Any, log: Any) -> None:
    """The record of the job's end; one that cannot be written (a read-only or full disk) is
    said in the log, never raised: the job's outcome stands, only its record is missing."""
    try:
        write_job_record(job, final=True)
    except OSError as error:
        log.note(
            f"[end] could not write the job's record {job.job_dir / RECORD}: "
            f"{error.strerror or error} (is its folder read-only, or the disk full?); "
            "`smdist status` will say the job ended without an outcome"
        )
