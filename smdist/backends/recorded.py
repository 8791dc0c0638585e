"""Jobs and searches recorded on this machine (``<root>/jobs/<name>/job.json``,
``<root>/tuning/<name>/``) as ``JobView``s: what the local backends' ``attach`` finds.

A record names the backend that wrote it; that backend says where the job ran
(``Backend.where``), so this module reads every record the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smdist.backends import registry
from smdist.backends.job_records import (
    RECORD,
    LocalJobRecord,
    read_job,
    request_stop,
    wait_for_end,
)
from smdist.backends.job_records import follow as follow_log
from smdist.backends.local_studies import (
    LocalStudy,
    is_study,
    list_studies,
    read_study,
    search_holder,
    stop_search,
    studies_dir,
)
from smdist.backends.views import JobView, ReportEnd, Say
from smdist.errors import NO_SUCH_JOB, OPTION, Problem, SpecError


class RecordedJob(JobView):
    """A job a local backend ran, as its folder records it now."""

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.name = read_job(job_dir).name

    @property
    def record(self) -> LocalJobRecord:
        return read_job(self.job_dir)

    def status_lines(self) -> list[str]:
        job = self.record
        backend = registry.get(str(job.record.get("backend") or registry.DEFAULT_BACKEND))
        lines = [f"{job.name}\t{job.status}\t{backend.where(job.record, job.job_dir)}"]
        if job.failure_reason:
            lines.append(f"reason: {job.failure_reason}")
        if job.status == "Completed" and job.model_artifacts:
            lines.append(f"model: {job.model_artifacts}")
        return lines

    def status_document(self) -> dict[str, Any]:
        job = self.record
        return {**job.record, "status": job.status, "failure_reason": job.failure_reason}

    @property
    def exit_code(self) -> int:
        return self.record.exit_code

    def logs(self, follow: bool) -> Iterator[str]:
        """``<host[ rRANK]> | <text>`` lines so far; ``follow``: until the job ends."""
        job = self.record
        if not job.log.is_file():
            raise SpecError(
                [Problem(str(job.log), "does not exist: the job wrote no log")], NO_SUCH_JOB
            )
        yield from follow_log(job.log, lambda: read_job(self.job_dir).finished, follow)

    def stop(self, say: Say, *, wait: bool, poll: float, report_end: ReportEnd) -> None:
        job = self.record
        asked = request_stop(job)
        said = "stop requested" if asked else f"already {job.status}; nothing to stop"
        say(f"{job.name}: {said}")
        if wait and asked:
            ended = wait_for_end(self.job_dir, poll)
            report_end(ended, ended.status)


class RecordedStudy(JobView):
    """A local search (``smdist tune --local``), as its folder records it now."""

    def __init__(self, study: LocalStudy, root: Path) -> None:
        self.study, self.root, self.name = study, root, study.name

    def status_lines(self) -> list[str]:
        study = self.study
        where = f"local study: {study.completed} of {len(study.trials)} trial(s) completed"
        lines = [f"{study.name}\t{study.status}\t{where}, in {study.directory}"]
        if study.note:
            lines.append(f"note: {study.note}")
        best = study.best
        if best is None:
            if study.status != "InProgress":
                lines.append("best: none (no trial completed with a value of the objective)")
            return lines
        lines.append(
            f"best: trial {best.get('trial')} ({best.get('name')})\t"
            f"{study.objective_metric} = {best.get('objective')}"
        )
        ignored = {"trial", "name", "objective", "status", "model", "reason"}
        values = {key: value for key, value in best.items() if key not in ignored}
        lines.append(f"hyperparameters: {json.dumps(values, sort_keys=True, default=str)}")
        if best.get("model"):
            lines.append(f"model: {best['model']}")
        return lines

    def status_document(self) -> dict[str, Any]:
        study = self.study
        document = {**study.document, "status": study.status, "note": study.note}
        return document | {"directory": str(study.directory), "search_pid": study.holder}

    @property
    def exit_code(self) -> int:
        return read_study(self.study.directory).exit_code

    def logs(self, follow: bool) -> Iterator[str]:
        return self.trial(None, lambda line: None).logs(follow)

    def trial(self, wanted: str | None, say: Say) -> JobView:
        """The trial whose logs to show: ``--job`` (its name or number), else the best trial,
        else the latest one."""
        study = self.study
        trials = sorted(study.trials, key=lambda t: t.get("trial", -1))
        if wanted is not None:
            chosen = next(
                (t for t in trials if wanted in (t.get("name"), str(t.get("trial")))), None
            )
            if chosen is None:
                names = ", ".join(str(t.get("name")) for t in trials) or "none yet"
                problem = Problem("--job", f"is no trial of study {study.name}", wanted, names)
                raise SpecError([problem], OPTION)
        else:
            chosen = study.best or (trials[-1] if trials else None)
            if chosen is None:
                problem = Problem("job_name", "is a local study with no trial yet", study.name)
                raise SpecError([problem], NO_SUCH_JOB)
        say(f"{study.name}: logs of trial {chosen.get('trial')} ({chosen.get('name')})")
        found = find_job(str(chosen.get("name")), self.root)
        if found is None:
            raise missing(str(chosen.get("name")), self.root, "local")
        return found

    def stop(self, say: Say, *, wait: bool, poll: float, report_end: ReportEnd) -> None:
        """Stop the study's running search; with ``wait``, until it has ended."""
        study = self.study
        if not stop_search(study):
            say(f"{study.name}: already {study.status}; nothing to stop")
            return
        say(f"{study.name}: stop requested (SIGTERM to its search, pid {study.holder})")
        if wait:
            while search_holder(study.directory) is not None:
                time.sleep(min(poll, 1.0))
            ended = read_study(study.directory)
            say(f"{ended.name}: {ended.status}; `smdist tune FILE --local` resumes it")


def _places(name: str, root: Path) -> list[Path]:
    places = [root / "jobs" / name]
    if "/" in name or name.startswith("."):  # a job folder's path
        places.insert(0, Path(name))
    return places


def is_path(name: str) -> bool:
    """Whether ``name`` names a job folder by its path, not a job by its name."""
    return len(_places(name, Path("."))) > 1


def find_job(name: str, root: Path) -> RecordedJob | None:
    """The job recorded as ``name`` (or at that path); None when there is none. A folder that
    holds a job's logs but no record is an error saying why (still preparing, a full disk)."""
    places = _places(name, root)
    for place in places:
        if (place / RECORD).is_file():
            return RecordedJob(place)
    for place in places:
        if place.is_dir() and (place / "logs").is_dir():  # a local job's folder, never AWS's
            raise SpecError(
                [
                    Problem(
                        "job_name",
                        f"is a local job folder without its record {place / RECORD}: the job "
                        "is still being prepared, never started, or its record could not be "
                        f"written (a full disk); its log, if any, is {place / 'logs' / 'job.log'}",
                        name,
                    )
                ],
                NO_SUCH_JOB,
            )
    return None


def find(name: str, root: Path, *, studies: bool) -> JobView | None:
    """The job, or (``studies``) the local search, recorded under ``root`` as ``name``."""
    study = studies_dir(root) / name
    if (
        studies
        and not is_path(name)
        and is_study(study)
        and not (root / "jobs" / name / RECORD).is_file()
    ):
        return RecordedStudy(read_study(study), root)
    return find_job(name, root)


def missing(name: str, root: Path, backend: str) -> SpecError:
    """No such job under ``root`` (``--backend`` named one that keeps records here)."""
    looked = " and ".join(str(place / RECORD) for place in _places(name, root))
    return SpecError(
        [
            Problem(
                "job_name",
                f"is no {backend} job: there is no {looked}",
                name,
                f"the name of a job run under {root} (--root), or its directory",
            )
        ],
        NO_SUCH_JOB,
    )


def names(root: Path) -> list[str]:
    """The names of the jobs and searches recorded under ``root``."""
    found = [path.name for path in list_studies(root)]
    try:
        found += [p.name for p in (root / "jobs").iterdir() if (p / RECORD).is_file()]
    except OSError:
        pass
    return found


class RecordedHere:
    """What a backend that records its jobs under a ``root`` on this machine does to find and
    list them (mixed into its ``Backend``: the emulator, SageMaker local mode)."""

    name: str
    finds_studies = False  # its searches are recorded under ``root`` too

    def attach(self, name: str, options: Any) -> JobView | None:
        """The job (or search) recorded under ``root`` as ``name`` (or at that path)."""
        return find(name, options.root, studies=self.finds_studies)

    def known_names(self, options: Any) -> list[str]:
        return names(options.root)

    def not_found(self, name: str, options: Any) -> SpecError:
        return missing(name, options.root, self.name)

    def list(self, options: Any) -> list[Any]:
        """Every job, trial and search recorded under ``root``, newest first."""
        # lazy: the rows, for `smdist jobs` only
        from smdist.backends.job_rows import rows

        return rows(options.root)
