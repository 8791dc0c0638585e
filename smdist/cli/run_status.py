"""The live status line under ``smdist run``'s log on a terminal: elapsed, step, loss, samples/s.

A job prints its metrics as log lines (the ready scripts: ``[metrics] step=6 loss=1.37
samples_per_sec=1176``); on a terminal the latest of them stay in one line below the log,
redrawn in place, so that progress shows without reading the scroll. The log lines stay as
they are, above it. Off (the plain lines alone, as in a CI log) when stdout is no terminal,
with ``--quiet``, or when the ``CI`` variable is set; the line is gone when the job ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any

import typer

QuietFlag = Annotated[
    bool, typer.Option("--quiet", "-q", help="no live status line: the log lines only")
]

# name=value or name: value, as scripts print metrics; samples/s under either spelling.
_METRIC = re.compile(
    r"\b(?P<name>step|loss|samples_per_sec|samples/s)\s*[=:]\s*(?P<value>[-+]?\d[\d.eE+-]*)"
)


class RunStatus:
    """The latest step, loss and samples/s seen in the job's lines, and the time since start."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.metrics: dict[str, str] = {}

    def feed(self, line: str) -> None:
        for match in _METRIC.finditer(line):
            name = "samples/s" if match["name"].startswith("samples") else match["name"]
            self.metrics[name] = match["value"]

    def text(self) -> str:
        seconds = int(self.clock() - self.started)
        elapsed = f"running {seconds // 60:02d}:{seconds % 60:02d}"
        if not self.metrics:
            return f"{elapsed} | no metrics yet (lines such as 'step=10 loss=0.5')"
        shown = [elapsed]
        if "step" in self.metrics:
            shown.append(f"step {_formatted(self.metrics['step'], '.0f')}")
        if "loss" in self.metrics:
            shown.append(f"loss {_formatted(self.metrics['loss'], '.4g')}")
        if "samples/s" in self.metrics:
            shown.append(f"{_formatted(self.metrics['samples/s'], ',.0f')} samples/s")
        return " | ".join(shown)

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text(self.text(), style="bold reverse")


def _may_be_terminal(environ: Mapping[str, str]) -> bool:
    """Whether rich could find a terminal: stdout is one, or a variable says to act as if
    (rich reads FORCE_COLOR, TTY_COMPATIBLE and TTY_INTERACTIVE). Checked first because
    importing rich (some 13 ms) would otherwise delay every job's hosts when nothing is drawn."""
    if any(environ.get(name) for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return True
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdout: rich decides
        return True


def _formatted(value: str, spec: str) -> str:
    try:
        return format(float(value), spec)
    except ValueError:  # a number the pattern took that Python does not read: as printed
        return value


class LiveStatus:
    """``console`` for the job's log (None: the backend's own), ``showing()`` around the wait."""

    def __init__(self, quiet: bool, environ: Mapping[str, str] | None = None) -> None:
        self.status = RunStatus()
        self.console: Any = None  # what the job's log is printed on; None: not shown live
        self.live_console: Any = None
        environ = os.environ if environ is None else environ
        if quiet or environ.get("CI") or not _may_be_terminal(environ):
            return
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=True)
        if console.is_terminal and not console.is_dumb_terminal:
            self.live_console = console
            self.console = _Feeding(console, self.status)

    @contextlib.contextmanager
    def showing(self) -> Iterator[None]:
        if self.console is None:
            yield
            return
        from rich.live import Live

        self.status.started = self.status.clock()
        live = Live(self.status, console=self.live_console, refresh_per_second=4, transient=True)
        with live:
            try:
                yield
            finally:
                live.refresh()  # the last metrics drawn once, however short the job


class _Feeding:
    """The job's console, handing each line to the status as it prints it."""

    def __init__(self, console: Any, status: RunStatus) -> None:
        self._console, self._status = console, status

    def print(self, *objects: Any, **options: Any) -> None:
        for item in objects:
            self._status.feed(str(item))  # a rich Text reads as its plain text
        self._console.print(*objects, **options)

    def __getattr__(self, name: str) -> Any:  # the rest is the console's own
        return getattr(self._console, name)
