"""What the live console leaves out once smdist is stopping a job: the shutdown noise of the
processes it stopped.

A stopped torchrun agent raises ``SignalException`` and prints two chained tracebacks (about 35
lines per host) and a warning per worker it signals; none of it says anything the stop did not.
Once a stop has begun, ``ShutdownNoise`` holds each host's traceback until its exception line
says what it is, then drops it or shows it:

- after a stop the user asked for (Ctrl-C, SIGTERM, ``smdist stop``, ``Job.stop()``) or max_run,
  every traceback of the hosts is a consequence of that stop: all are left out;
- after a failure or a stall, only the agents' ``SignalException`` tracebacks are: the failing
  rank's own traceback is the job's failure reason and is always shown.

Only the console is quieted: the job's log files keep every line, and the view says how many
lines it left out and where they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from smdist.backends.local.reports.logs import SMDIST, ConsoleView, JobLog
from smdist.backends.log_lines import prefixed, split_prefixed

TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
# torchrun's agent once it has been signalled: what it does with the workers it stops.
_AGENT_SHUTDOWN = re.compile(
    r"torch/distributed/elastic/.*\] (Received \d+ death signal|Sending process \d+ closing signal)"
)
# The last line of a traceback: the exception's (dotted) class name, then its message. Any other
# line in between is another process of the same host writing meanwhile.
_EXCEPTION_LINE = re.compile(
    r"[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning|Failure|Timeout|Iteration)\b"
)
_RANK_PREFIX = re.compile(r"(\[rank\d+\]):[ ]?")
_SIGNAL_EXCEPTION = re.compile(r"SignalException: Process \d+ got signal: \d+")


@dataclass
class _Held:
    """One host's traceback being held: its lines, and its exception line once seen."""

    lines: list[str] = field(default_factory=list)
    exception: str | None = None  # set: the traceback may still go on with a chained one


class ShutdownNoise:
    """Filters combined-log lines for the console; ``stopping()`` says whether (and why) a stop
    has begun: None, or "requested" for a stop asked for (max_run included), or "failure"."""

    def __init__(self, stopping: Callable[[], str | None]) -> None:
        self._stopping = stopping
        self._held: dict[str, _Held] = {}
        self.left_out = 0

    def feed(self, line: str) -> list[str]:
        """The lines to show now for one line of the combined log (none, it, or held ones)."""
        parts = split_prefixed(line)
        if parts is None or parts[0] == SMDIST:
            return [line]
        label, text = parts
        prefix = _RANK_PREFIX.match(text)  # torchrun's "[rank1]: " before a worker's lines
        if prefix:
            label, text = f"{label} {prefix.group(1)}", text[prefix.end() :]
        held = self._held.get(label)
        if held is not None:
            if held.exception is None:
                if _inside(text) or _EXCEPTION_LINE.match(text):
                    held.lines.append(line)
                    held.exception = None if _inside(text) else text
                    return []
                return [line]  # another process of the host, between the traceback's lines
            if not text:  # perhaps a chained traceback follows
                held.lines.append(line)
                return []
            if text.startswith((TRACEBACK, *_CHAINED)):  # its own exception line decides
                held.lines.append(line)
                held.exception = None
                return []
            return self._end(label) + self.feed(line)
        if self._stopping() is None:
            return [line]
        if text.startswith(TRACEBACK):
            self._held[label] = _Held([line])
            return []
        if _AGENT_SHUTDOWN.search(text):
            self.left_out += 1
            return []
        return [line]

    def flush(self) -> list[str]:
        """The job has ended: decide every traceback still held."""
        shown: list[str] = []
        for label in list(self._held):
            shown += self._end(label)
        return shown

    def _end(self, label: str) -> list[str]:
        held = self._held.pop(label)
        # A stop asked for: every traceback (even one cut short) is the stop's; otherwise only
        # a signalled agent's.
        noise = self._stopping() == "requested" or (
            held.exception is not None and bool(_SIGNAL_EXCEPTION.search(held.exception))
        )
        if noise:
            self.left_out += len(held.lines)
            return []
        return held.lines


def _inside(text: str) -> bool:
    """A line of a traceback before its exception line: a frame, a blank, a chain's header."""
    return not text or text[0].isspace() or text.startswith((TRACEBACK, *_CHAINED))


class QuietConsoleView:
    """The live console view, quieted by ``ShutdownNoise`` once a stop has begun; ``end()``
    shows what it still held and says how many lines it left out and where they are."""

    def __init__(
        self, console: object, stopping: Callable[[], str | None], log: JobLog | None
    ) -> None:
        self._view = ConsoleView(console)
        self._noise = ShutdownNoise(stopping)
        self._log = log

    def show(self, line: str) -> None:
        for kept in self._noise.feed(line):
            self._view.show(kept)

    def end(self) -> None:
        for kept in self._noise.flush():
            self._view.show(kept)
        left_out, self._noise.left_out = self._noise.left_out, 0
        if left_out and self._log is not None:
            self._view.show(
                prefixed(
                    SMDIST,
                    f"{left_out} line(s) of the stopped processes' shutdown output (tracebacks, "
                    f"launcher messages) not shown here; they are in {self._log.path}",
                    self._log.width,
                )
            )
