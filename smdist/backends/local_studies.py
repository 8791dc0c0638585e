"""A local hyperparameter search as its folder records it: ``<root>/tuning/<name>/``.

The search writes ``trials.json`` whenever a trial starts or ends (``local.tuning.store``) and
holds an exclusive ``flock`` on ``study.lock`` while it runs (``local.tuning.lock``). ``smdist
status|logs|stop|jobs`` read both here without taking the lock (a reader that took it, even
for an instant, could make a search starting then refuse to run) and without Optuna: the kernel
lists who holds which lock in ``/proc/locks``. Standard library only, as ``job_records``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smdist.errors import NO_SUCH_JOB, Problem, SpecError

SNAPSHOT = "trials.json"  # as local.tuning.store writes it
LOCK = "study.lock"  # as local.tuning.lock holds it
JOURNAL = "study.journal"
STATUSES = ("InProgress", "Completed", "Stopped")


def studies_dir(root: Path) -> Path:
    return root / "tuning"


def is_study(directory: Path) -> bool:
    return (directory / SNAPSHOT).is_file() or (directory / JOURNAL).is_file()


def search_holder(directory: Path) -> int | None:
    """The pid of the search running this study now (it holds the lock), or None."""
    path = directory / LOCK
    try:
        inode = path.stat().st_ino
        written = path.read_text().strip()
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue  # a waiter, or another kind of lock
        pid, where = fields[4], fields[5]
        # The lock file names its holder too: both must agree (an inode alone may be reused).
        if where.rsplit(":", 1)[-1] == str(inode) and pid == written:
            return int(pid)
    return None


@dataclass(frozen=True)
class LocalStudy:
    """A local search as its folder describes it now."""

    directory: Path
    document: dict[str, Any]
    status: str  # InProgress, Completed, Stopped
    note: str | None  # why the status is not the one written, when it is not
    holder: int | None  # the running search's pid

    @property
    def name(self) -> str:
        return str(self.document.get("name") or self.directory.name)

    @property
    def trials(self) -> list[dict[str, Any]]:
        return list(self.document.get("trials") or [])

    @property
    def completed(self) -> int:
        return sum(1 for trial in self.trials if trial.get("status") == "Completed")

    @property
    def best(self) -> dict[str, Any] | None:
        number = self.document.get("best")
        return next((t for t in self.trials if t.get("trial") == number), None)

    @property
    def objective_metric(self) -> str:
        return str(self.document.get("objective_metric") or "objective")

    @property
    def exit_code(self) -> int:
        """As ``smdist tune``'s: 1 when it was stopped or ended without a completed trial."""
        if self.status == "InProgress":
            return 0
        return 0 if self.status == "Completed" and self.best is not None else 1


def _not_a_study(path: Path, why: str) -> SpecError:
    problem = Problem(str(path), f"is not a search smdist recorded: {why}")
    return SpecError([problem], NO_SUCH_JOB)


def read_study(directory: Path) -> LocalStudy:
    """The study in ``directory``; a SpecError saying why when its record cannot be read."""
    holder = search_holder(directory)
    path = directory / SNAPSHOT
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        if holder is None:
            raise _not_a_study(path, "it does not exist (no trial was ever recorded)") from None
        document = {}  # a search that has just begun
    except (OSError, ValueError) as error:
        raise _not_a_study(path, f"it cannot be read ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("trials", []), list):
        raise _not_a_study(path, "it is not an object with a list of trials")
    if not all(isinstance(trial, dict) for trial in document.get("trials", [])):
        raise _not_a_study(path, "a trial is not an object")
    status = document.get("status", "InProgress")
    if status not in STATUSES:
        raise _not_a_study(path, f"its status is {status!r}, not one of {', '.join(STATUSES)}")
    note = None
    if status == "InProgress" and holder is None:
        status = "Stopped"
        note = (
            "its search ended without recording an outcome (killed?): `smdist tune FILE "
            "--local` with the same job file resumes it"
        )
    return LocalStudy(directory, document, status, note, holder)


def list_studies(root: Path) -> list[Path]:
    """Every study folder under ``root``."""
    folder = studies_dir(root)
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and is_study(p))
    except OSError:
        return []


def stop_search(study: LocalStudy) -> bool:
    """SIGTERM to the running search (it stops its trials as Ctrl-C does); False if none."""
    import signal

    if study.holder is None or study.holder == os.getpid():
        return False
    os.kill(study.holder, signal.SIGTERM)
    return True


__all__ = ["LocalStudy", "is_study", "list_studies", "read_study", "search_holder", "stop_search"]
