"""A local job followed on a console while ``wait(logs=True)`` blocks: its log lines as they
come (quieted once a stop begins, ``QuietConsoleView``), Ctrl-C stopping the job and a second
one killing it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from smdist.backends.job_records import follow as follow_log
from smdist.backends.local.reports.shutdown_noise import QuietConsoleView


def follow_until_done(job: Any, timeout: float | None, logs: bool) -> None:
    """Block until ``job`` ends (or ``timeout``), showing its log on its console with
    ``logs``. Ctrl-C stops the job, waits for the end, then re-raises."""
    deadline = None if timeout is None else time.monotonic() + timeout
    view: QuietConsoleView | None = None
    shown = [0]

    def over() -> bool:
        return job.done.is_set() or (deadline is not None and time.monotonic() >= deadline)

    def console_view() -> QuietConsoleView | None:
        return QuietConsoleView(job.options.console, job.stopping, job.log) if logs else None

    try:
        try:
            if logs:
                # The view's imports (rich) would hold the interpreter lock while the job's
                # thread starts the hosts: made once they are started.
                _until_hosts_started(job, over)
            view = console_view()
            _show_until(job, view, shown, over, timeout)
        except KeyboardInterrupt:
            view = view or console_view()
            job.stop(by="Ctrl-C")
            if job.log is not None and not job.done.is_set():
                job.log.note("interrupted: stopping the job (Ctrl-C again kills it now)")
            try:
                _show_until(job, view, shown, job.done.is_set, None)
            except KeyboardInterrupt:
                job.kill()
                _show_until(job, view, shown, job.done.is_set, None)
            raise
    finally:
        if view is not None:
            view.end()


def _until_hosts_started(job: Any, over: Callable[[], bool]) -> None:
    while not over():
        supervisor = job.supervisor
        if supervisor is not None and supervisor.spawned.wait(0.05):
            return
        if supervisor is None:
            job.done.wait(0.005)


def _show_until(
    job: Any, view: Any, shown: list[int], finished: Callable[[], bool], timeout: float | None
) -> None:
    """Print log lines (after the ``shown[0]`` already printed) until ``finished()``."""
    if view is None or job.log is None:
        job.done.wait(timeout)
        return
    lines = follow_log(job.log.path, finished, True, job.log.wait_for_lines)
    for index, line in enumerate(lines):
        if index >= shown[0]:
            view.show(line)
            shown[0] = index + 1
