"""A job run on this machine, as its directory records it: ``<root>/jobs/<name>/job.json``.

Both local backends (the emulator and SageMaker local mode) write the record; ``smdist
status|logs|stop`` and a job handle in another process read it, and follow its combined log
(``logs/job.log``). A stop is asked of the job's supervising process by a file in the job
directory; the record names that process by ``process_identity``. A record still InProgress
whose supervising process is gone (kill -9, OOM) is written back as Failed by the first reader
that finds it so, with an end time. Standard library only, so reading a job loads neither
backend.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smdist.backends.safe_files import write_text_atomically
from smdist.errors import NO_SUCH_JOB, Problem, SpecError

RECORD = "job.json"
FINISHED = ("Completed", "Failed", "Stopped")
STATUSES = ("InProgress", "Stopping", *FINISHED)
STOP_FILE = "stop-requested"  # in the job directory: another process asks for a stop


def process_identity(pid: int | None = None) -> list[int] | None:
    """[pid, start time in clock ticks since boot] of a live process: it names that process
    even after the pid is reused (``job.json`` records the supervising process this way)."""
    pid = os.getpid() if pid is None else pid
    try:
        raw = (Path("/proc") / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()  # field 3 (state) onwards; 22 is the start
    if len(fields) < 20 or fields[0] == b"Z":
        return None
    return [pid, int(fields[19])]


@dataclass(frozen=True)
class LocalJobRecord:
    """A local job as its directory describes it now."""

    job_dir: Path
    record: dict[str, Any]
    status: str
    failure_reason: str | None

    @property
    def name(self) -> str:
        return str(self.record.get("name") or self.job_dir.name)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def model_artifacts(self) -> str | None:
        return self.record.get("model_artifacts")

    @property
    def exit_code(self) -> int:
        """As for a SageMaker job: 1 when it failed or was stopped, else 0."""
        return 1 if self.status in ("Failed", "Stopped") else 0

    @property
    def started(self) -> float | None:
        """When it started (seconds since the epoch); None in a record from before it was kept."""
        return self.record.get("started")

    @property
    def ended(self) -> float | None:
        """When it ended: as a reader that found it dead recorded it, else when its final
        record was written (None while it runs)."""
        if not self.finished:
            return None
        recorded = self.record.get("ended")  # a number or None: read_job checked it
        if recorded is not None:
            return float(recorded)
        try:
            return (self.job_dir / RECORD).stat().st_mtime
        except OSError:
            return None

    @property
    def log(self) -> Path:
        return self.job_dir / "logs" / "job.log"


def _supervisor_alive(identity: Any) -> bool:
    if not (isinstance(identity, list) and len(identity) == 2):
        return True  # a record without one: trust what it says
    return process_identity(int(identity[0])) == identity


def _text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _time(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _count(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


# What each field of a record may hold (absent is fine: the two backends write different ones).
FIELD_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "name": (_text, "a job name"),
    "backend": (_text, "a backend name"),
    "status": (lambda v: v in STATUSES, "one of " + ", ".join(STATUSES)),
    "failure_reason": (_text, "a text or null"),
    "model_artifacts": (_text, "a URI or null"),
    "job_dir": (_text, "a folder"),
    "log": (_text, "a file or null"),
    "hosts": (
        lambda v: isinstance(v, list) and all(isinstance(h, str) for h in v),
        "a list of host names",
    ),  # fmt: skip
    "processes_per_host": (_count, "a whole number or null"),
    "instance_count": (_count, "a whole number or null"),
    "exit_codes": (
        lambda v: v is None or (isinstance(v, dict) and all(_count(c) for c in v.values())),
        "host -> exit code, or null",
    ),  # fmt: skip
    "started": (_time, "seconds since the epoch, or null"),
    # Written only by a reader that found the supervising process gone (``_found_dead``).
    "ended": (_time, "seconds since the epoch, or null"),
    "supervisor": (
        lambda v: (
            v is None
            or (isinstance(v, list) and len(v) == 2 and all(_count(n) and n is not None for n in v))
        ),
        "[pid, start] or null",
    ),  # fmt: skip
}


def _not_a_record(path: Path, why: str, value: Any = None, valid: str | None = None):
    problem = Problem(str(path), f"is not a job record smdist wrote: {why}", value, valid)
    return SpecError([problem], NO_SUCH_JOB)


def _load(path: Path) -> dict[str, Any]:
    """The record at ``path``, each field of the type smdist writes (else a SpecError)."""
    try:
        text = path.read_text()
    except OSError as error:
        raise SpecError([Problem(str(path), f"cannot be read: {error}")], NO_SUCH_JOB) from None
    try:
        record = json.loads(text)
    except ValueError as error:
        raise _not_a_record(path, f"not JSON ({error})") from None
    if not isinstance(record, dict):
        raise _not_a_record(path, "not a JSON object", type(record).__name__, "an object")
    for field, (check, expected) in FIELD_CHECKS.items():
        if field in record and not check(record[field]):
            raise _not_a_record(path, f"its {field!r} is {record[field]!r}", None, expected)
    return record


def read_job(job_dir: Path) -> LocalJobRecord:
    """The job's record, its status corrected for a stop asked for or a supervisor gone."""
    path = job_dir / RECORD
    record = _load(path)
    status = str(record.get("status", "InProgress"))
    reason = record.get("failure_reason")
    if status not in FINISHED:
        if not _supervisor_alive(record.get("supervisor")):
            # Read again: the supervisor writes the outcome just before it exits.
            record = _load(path)
            status, reason = str(record.get("status")), record.get("failure_reason")
            if status not in FINISHED:
                record = _found_dead(job_dir, record)
                status, reason = "Failed", record["failure_reason"]
        elif (job_dir / STOP_FILE).exists():
            status = "Stopping"
    return LocalJobRecord(job_dir, record, status, reason)


def _found_dead(job_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    """The record of a job whose supervising process ended without writing the job's end:
    Failed, saying so and when it was found, ended when its files were last written. Written
    back, so that every later reader (``smdist jobs``' duration too) reads the same end; a
    folder this reader may not write still gets the corrected record in memory."""
    now = time.time()
    started = record.get("started")
    ended = _last_written(job_dir) or now
    if isinstance(started, (int, float)):
        ended = max(ended, float(started))  # a clock set back must not give a negative duration
    found = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    pid = (record.get("supervisor") or ["?"])[0]
    reason = (
        f"the process supervising the job (pid {pid}) ended without recording an end, so "
        f"without an outcome (found at {found})"
    )
    dead = {**record, "status": "Failed", "failure_reason": reason, "ended": round(ended, 3)}
    try:  # atomic: another reader sees the old record or this one, never half of it
        write_text_atomically(job_dir / RECORD, json.dumps(dead, indent=1) + "\n")
    except OSError:
        pass  # a read-only folder or a full disk: the status read here is right all the same
    return dead


def _last_written(job_dir: Path) -> float | None:
    """When the job last wrote: its combined log (every host line goes there through the
    supervising process) or its record, whichever is later; two stats, no walk of the hosts."""
    times = []
    for path in (job_dir / "logs" / "job.log", job_dir / RECORD):
        try:
            times.append(path.stat().st_mtime)
        except OSError:
            continue
    return max(times, default=None)


def request_stop(job: LocalJobRecord) -> bool:
    """Ask the supervising process to stop the job; False when it has already ended."""
    if job.finished:
        return False
    # Replaces whatever is there (a link too, never followed): the folder may be shared.
    write_text_atomically(job.job_dir / STOP_FILE, f"stop requested at {time.time():.0f}\n")
    return True


def wait_for_end(job_dir: Path, poll: float) -> LocalJobRecord:
    job = read_job(job_dir)
    while not job.finished:
        time.sleep(min(poll, 1.0))
        job = read_job(job_dir)
    return job


def follow(
    path: Path,
    finished: Callable[[], bool],
    keep_following: bool,
    wait: Callable[[float], object] = time.sleep,
) -> Iterator[str]:
    """Lines of the combined log; with ``keep_following``, wait for more until ``finished``
    (``wait(seconds)``: between reads, returning early where the writer can say it wrote)."""
    buffer = ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        while True:
            chunk = handle.read(65536)
            if chunk:
                buffer += chunk
                *complete, buffer = buffer.split("\n")
                yield from complete
                continue
            if not keep_following:
                break
            if finished():
                rest = handle.read()
                if rest:
                    buffer += rest
                    continue
                break
            wait(0.05)
    if buffer:
        yield buffer
