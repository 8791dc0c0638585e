"""Where the commands write besides stdout: the stderr console, plain lines, a job's last line."""

from __future__ import annotations

from typing import Any


def stderr():
    from rich.console import Console

    return Console(stderr=True)


def plain(console: Any, text: str) -> None:
    """``text`` as it is: no markup, no highlighting, long lines not cut."""
    console.print(text, highlight=False, markup=False, soft_wrap=True)


def warn(console: Any, text: str) -> None:
    """A ``warning:`` line, yellow on a terminal, one line in a pipe (greppable)."""
    console.print(f"warning: {text}", style="yellow", highlight=False, markup=False, soft_wrap=True)


def report_end(job, status) -> None:
    """The last line of a job's output: its model, or why it failed (one line)."""
    console, status = stderr(), getattr(status, "value", status)
    if status == "Completed":
        text = f"{job.name}: Completed; model: {job.model_artifacts}"
    else:
        text = f"{job.name}: {status}: {job.failure_reason or 'no reason given'}"
    plain(console, text)
