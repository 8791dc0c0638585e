"""A local-mode job as its caller sees it: the Job protocol over the job's directory.

The job itself runs in its supervising process (``supervisor``); this side reads ``job.json``
and ``logs/job.log`` and asks for a stop with the stop file, so ``smdist status``, ``logs`` and
``stop`` in another terminal see and do exactly the same.

While ``wait`` runs in the main thread, Ctrl-C and SIGTERM stop the job and keep waiting
until it has ended (the supervisor's grace period bounds that), so the caller sees "Stopped".
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smdist.backends.base import JobError, JobStatus
from smdist.backends.job_records import follow as follow_log
from smdist.backends.job_records import read_job, request_stop
from smdist.planning.plan import Plan


class LocalModeJob:
    """A job run by the SageMaker SDK's local mode (``backend="sagemaker-local"``)."""

    backend = "sagemaker-local"

    def __init__(
        self,
        name: str,
        plan: Plan | None,
        job_dir: Path,
        process: subprocess.Popen | None = None,
        poll_seconds: float = 0.2,
    ) -> None:
        self.name, self.plan, self.job_dir = name, plan, Path(job_dir)
        self._process = process
        self._poll = max(0.05, min(poll_seconds, 1.0))

    def _record(self) -> Any:
        if self._process is not None:
            self._process.poll()  # reaps it once it has ended
        return read_job(self.job_dir)

    @property
    def status(self) -> JobStatus:
        return JobStatus(self._record().status)

    @property
    def model_artifacts(self) -> str | None:
        record = self._record()
        return record.model_artifacts if record.status == "Completed" else None

    @property
    def failure_reason(self) -> str | None:
        return self._record().failure_reason

    @property
    def log_path(self) -> Path:
        return self.job_dir / "logs" / "job.log"

    def logs(self, follow: bool = False) -> Iterator[str]:
        yield from follow_log(self.log_path, lambda: self.status.finished, follow)

    def stop(self) -> None:
        """Ask the supervisor to stop: Compose stops the containers, SIGKILL after the grace."""
        request_stop(self._record())

    def _follow(self, deadline: float | None, show: bool, position: list[int]) -> None:
        """Print new log lines (``show``) until the job ends or ``deadline`` passes."""
        while True:
            finished = self.status.finished
            if show and self.log_path.is_file():
                with open(self.log_path, "rb") as handle:
                    handle.seek(position[0])
                    chunk = handle.read()
                complete = chunk[: chunk.rfind(b"\n") + 1]
                if finished:
                    complete = chunk
                position[0] += len(complete)
                if complete:
                    sys.stdout.write(complete.decode("utf-8", "replace"))
                    sys.stdout.flush()
            if finished or (deadline is not None and time.monotonic() >= deadline):
                return
            time.sleep(self._poll)

    def wait(
        self, timeout: float | None = None, logs: bool = False, raise_on_failure: bool = False
    ) -> JobStatus:
        deadline = None if timeout is None else time.monotonic() + timeout
        position = [0]
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, self._stop_on_signal) if in_main else None
        try:
            try:
                self._follow(deadline, logs, position)
            except KeyboardInterrupt:
                print(f"{self.name}: Ctrl-C: stopping the job", file=sys.stderr, flush=True)
                self.stop()
                self._follow(None, logs, position)
        finally:
            if in_main:
                signal.signal(signal.SIGTERM, previous)
        status = self.status
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self.failure_reason)
        return status

    def _stop_on_signal(self, signum: int, frame: Any) -> None:
        print(f"{self.name}: SIGTERM: stopping the job", file=sys.stderr, flush=True)
        self.stop()


__all__ = ["LocalModeJob"]
