"""The jobs, trials and searches recorded under a root, as rows (``smdist jobs``).

Each row is a job (``smdist run``, ``smdist.fit``), a trial (a job a local study ran) or a study
(``smdist tune --local``): its name, kind, status, when it started and how long it ran, and for
a study its trials and best value. A folder whose record cannot be read is a row
``unreadable: <why>``, never a reason to stop listing the others.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from smdist.backends.job_records import RECORD, read_job
from smdist.backends.local_studies import LocalStudy, list_studies, read_study
from smdist.errors import SpecError


@dataclass(frozen=True)
class Row:
    name: str
    kind: str  # job, trial, study
    status: str  # a job's or study's status, or "unreadable: <why>"
    started: float | None  # seconds since the epoch
    duration: float | None  # seconds, so far for one still running
    trials: str = ""  # a study's: "2 of 3 completed, best loss=0.12 (trial 1)"
    directory: str = ""


def _why(error: Exception) -> str:
    if isinstance(error, SpecError) and error.problems:
        return error.problems[0].message
    return str(error) or type(error).__name__


def _between(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else round(max(0.0, end - start), 3)


def _job_row(job_dir: Path, trial_names: set[str]) -> Row:
    kind = "trial" if job_dir.name in trial_names else "job"
    if not (job_dir / RECORD).exists():
        why = f"no {RECORD} (being prepared, never started, or its record could not be written)"
        return Row(job_dir.name, kind, f"unreadable: {why}", None, None, "", str(job_dir))
    try:
        job = read_job(job_dir)
    except (SpecError, OSError) as error:
        return Row(job_dir.name, kind, f"unreadable: {_why(error)}", None, None, "", str(job_dir))
    end = job.ended if job.finished else time.time()
    return Row(
        job.name, kind, job.status, job.started, _between(job.started, end), "", str(job_dir)
    )


def _study_row(directory: Path, jobs: dict[str, Row]) -> Row:
    try:
        study = read_study(directory)
    except (SpecError, OSError) as error:
        why = f"unreadable: {_why(error)}"
        return Row(directory.name, "study", why, None, None, "", str(directory))
    # A study keeps no times of its own: its trials' jobs have them.
    runs = [jobs[str(t.get("name"))] for t in study.trials if str(t.get("name")) in jobs]
    starts = [row.started for row in runs if row.started is not None]
    started = min(starts) if starts else None
    ends = [row.started + row.duration for row in runs if row.started and row.duration]
    end = time.time() if study.status == "InProgress" else max(ends, default=None)
    duration = _between(started, end)
    return Row(study.name, "study", study.status, started, duration, _trials(study), str(directory))


def _trials(study: LocalStudy) -> str:
    text = f"{study.completed} of {len(study.trials)} trial(s) completed"
    best = study.best
    if best is not None:
        value = best.get("objective")
        text += f", best {study.objective_metric}={value} (trial {best.get('trial')})"
    return text


def rows(root: Path) -> list[Row]:
    """Every local job, trial and study under ``root``, newest first (unknown times last)."""
    studies = list_studies(root)
    trial_names = set()
    for directory in studies:
        try:
            trial_names |= {str(t.get("name")) for t in read_study(directory).trials}
        except (SpecError, OSError):
            pass  # listed as unreadable below
    try:
        job_dirs = sorted(p for p in (root / "jobs").iterdir() if p.is_dir())
    except OSError:
        job_dirs = []
    jobs = {d.name: _job_row(d, trial_names) for d in job_dirs if _is_job_dir(d)}
    found = list(jobs.values()) + [_study_row(d, jobs) for d in studies]
    return sorted(found, key=lambda row: (row.started is None, -(row.started or 0), row.name))


def _is_job_dir(path: Path) -> bool:
    # A folder holding a record, or the logs of a job that never wrote one (said as unreadable).
    return (path / RECORD).exists() or (path / "logs").is_dir()
