"""One live log stream for a local job: every line labelled by host (and rank where known).

Each emulated host's first process writes into one pipe; a thread per pipe reads it line by
line. Lines from mpirun (``--tag-output``: ``[1,3]<stdout>:``) carry the rank, which also
names the host the rank runs on. Every line is appended, flushed, to the job's combined log
(``<label> | <text>``, the prefix every backend's logs share: ``smdist.backends.log_lines``)
and to its host's own file; ``Job.logs()`` (``job_records.follow``) and the live console view
read the combined file, so a reader can start at any time and nothing is held in memory but
the recent lines used for failure reports.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import threading
import time
from collections import deque
from itertools import pairwise
from pathlib import Path
from typing import IO

from smdist.backends.log_lines import prefixed, split_prefixed

SMDIST = "smdist"
RECENT_LINES = 2000
# mpirun (``--tag-output``) tags every chunk it forwards: ``[1,3]<stdout>:``. A line written in
# pieces (Python writes a traceback's last line in three) carries its own rank's tag inside it;
# two ranks' partial writes interleaved without a newline put another rank's tag inside it.
_MPI_TAG = re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>:")
TAG_PATTERNS = {"mpirun": _MPI_TAG}
# What torch puts before each line of a rank's traceback; ranks sharing a host's output
# unbuffered write a line's text and its newline apart, so another rank's may land between.
# Only right after other text: a user's own log format ("12:00:01 [rank0]: loss") is one line.
_TORCH_RANK_PREFIX = re.compile(r"(?<=\S)\[rank\d+\]: ")


def label(host: str, rank: int | None) -> str:
    return host if rank is None else f"{host} r{rank}"


def parse_label(text: str) -> tuple[str, int | None]:
    host, _, rank = text.partition(" r")
    return host, (int(rank) if rank.isdigit() else None)


class LogFile:
    """One log file, appended to a whole line at a time: a line the disk refuses is not in the
    file at all (never half of it, never kept to be written later, after lines shown
    elsewhere meanwhile)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._descriptor: int | None = os.open(
            path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
        )

    def append(self, text: str) -> None:
        if self._descriptor is None:
            raise OSError(errno.EBADF, "the log is closed", str(self.path))
        data = text.encode("utf-8", "replace")
        size = os.fstat(self._descriptor).st_size
        try:
            while data:
                data = data[os.write(self._descriptor, data) :]
        except OSError:
            with contextlib.suppress(OSError):  # what part of the line got in comes out again
                os.ftruncate(self._descriptor, size)
            raise

    def close(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


class JobLog:
    """The sink every line goes through; thread-safe."""

    def __init__(self, log_dir: Path, hosts: list[str]) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.path = log_dir / "job.log"
        self.host_paths = {host: log_dir / f"{host}.log" for host in hosts}
        self._combined = LogFile(self.path)
        self._files = {host: LogFile(path) for host, path in self.host_paths.items()}
        self._lock = threading.Lock()
        self._written = threading.Event()  # set by every line: a reader in this process wakes
        self.write_error: Exception | None = None  # the first line that could not be written
        self.recent: deque[tuple[int, str, int | None, str]] = deque(maxlen=RECENT_LINES)
        self._sequence = 0
        self.last_output = time.monotonic()
        self.width = max([len(SMDIST), *(len(h) + 4 for h in hosts)])

    def add(self, host: str, rank: int | None, text: str) -> None:
        name = label(host, rank)
        with self._lock:
            self._sequence += 1
            self.recent.append((self._sequence, host, rank, text))
            if host != SMDIST:
                self.last_output = time.monotonic()
            line = prefixed(name, text, self.width)
            if not self._write(self._combined, line):
                self._echo(line)  # the console follows the combined log: it shows it here
            handle = self._files.get(host)
            if handle is not None:
                self._write(handle, f"[rank {rank}] {text}" if rank is not None else text)
        self._written.set()

    def _write(self, handle: LogFile, line: str) -> bool:
        """Append ``line`` to one file; a full disk or a read-only folder is said once and the
        job goes on (its lines stay in memory). Each file on its own: a host's file that cannot
        grow never keeps a line from the combined log."""
        try:
            handle.append(line + "\n")
            return True
        except OSError as error:
            self._cannot_write(error)
            return False

    def _echo(self, line: str) -> None:
        """A line the combined log could not take, on smdist's standard error instead."""
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass  # standard error is gone too: the line stays in memory only

    def _cannot_write(self, error: Exception) -> None:
        if self.write_error is None:
            self.write_error = error
            self._echo(
                f"smdist: cannot write the job's log {self.path}: {error}; its lines that do "
                "not fit follow here"
            )

    def wait_for_lines(self, timeout: float) -> None:
        """Return once a line has been written since the last call (or after ``timeout``):
        the console shows a line as it comes, not at the next poll of the file."""
        self._written.wait(timeout)
        self._written.clear()

    def note(self, text: str) -> None:
        """A line from smdist itself (phases, notes, the outcome)."""
        for line in text.splitlines() or [""]:
            self.add(SMDIST, None, line)

    def touch(self) -> None:
        """Count as output (a process started), for the stall watchdog."""
        with self._lock:
            self.last_output = time.monotonic()

    def recent_lines(self) -> list[tuple[int, str, int | None, str]]:
        """A copy of the recent lines, safe to read while the hosts write."""
        with self._lock:
            return list(self.recent)

    def lines_of(self, host: str, rank: int | None = None) -> list[str]:
        with self._lock:
            return [
                text for _, h, r, text in self.recent if h == host and (rank is None or r == rank)
            ]

    def last_process_line(self) -> str | None:
        """The newest line a training process (not smdist) printed."""
        with self._lock:
            for _, host, rank, text in reversed(self.recent):
                if host != SMDIST:
                    return f"{label(host, rank)}: {text.strip()}"
        return None

    def close(self) -> None:
        with self._lock:
            for handle in [self._combined, *self._files.values()]:
                handle.close()


def attribute(
    text: str, host: str, tags: str | None, rank_hosts: list[str]
) -> list[tuple[str, int | None, str]]:
    """The (host, rank, text without the launcher's tags) lines one output line holds.

    A line is cut wherever a tag names another rank than the text before it, each part credited
    to its own rank and that rank's host; tags of the same rank only join the pieces of one
    line. A line that does not start with a tag is the launcher's own, credited to ``host``,
    cut before any torch ``[rankN]: `` prefix within it (another rank's line written into it).
    """
    pattern = TAG_PATTERNS.get(tags or "")
    if pattern is None or not pattern.match(text):
        if "[rank" not in text:  # nearly every line: no regex on the log's hot path
            return [(host, None, text)]
        cuts = [0, *(m.start() for m in _TORCH_RANK_PREFIX.finditer(text)), None]
        return [(host, None, text[a:b]) for a, b in pairwise(cuts)]
    parts: list[tuple[int, str]] = []  # (rank, text) in the order they came
    tagged = list(pattern.finditer(text))
    for match, following in zip(tagged, [*tagged[1:], None], strict=True):
        rank = int(match.group(1))
        body = text[match.end() : following.start() if following else len(text)]
        if parts and parts[-1][0] == rank:
            parts[-1] = (rank, parts[-1][1] + body)
        elif body or not parts:  # another rank's empty piece adds no line
            parts.append((rank, body))
    return [
        (rank_hosts[rank] if 0 <= rank < len(rank_hosts) else host, rank, body)
        for rank, body in parts
    ]


def pump(
    stream: IO[bytes], log: JobLog, host: str, tags: str | None, rank_hosts: list[str]
) -> None:
    """Read ``stream`` to its end, handing every line to ``log``."""
    with stream:
        for raw in iter(stream.readline, b""):
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            for line in attribute(text, host, tags, rank_hosts):
                log.add(*line)


class ConsoleView:
    """Prints combined-log lines with a colour per host when the output is a terminal."""

    PALETTE = (
        "cyan",
        "magenta",
        "green",
        "yellow",
        "blue",
        "bright_red",
        "bright_cyan",
        "bright_magenta",
        "bright_green",
        "bright_yellow",
    )

    def __init__(self, console=None) -> None:
        from rich.console import Console

        self.console = console or Console(highlight=False, soft_wrap=True)
        self._styles: dict[str, str] = {}

    def _style(self, host: str) -> str:
        if host == SMDIST:
            return "bold"
        if host not in self._styles:
            self._styles[host] = self.PALETTE[len(self._styles) % len(self.PALETTE)]
        return self._styles[host]

    def show(self, line: str) -> None:
        from rich.text import Text

        parts = split_prefixed(line)
        if parts is None:
            self.console.print(Text(line), markup=False)
            return
        host, _ = parse_label(parts[0])
        style = self._style(host)
        prefix = line[: len(line) - len(parts[1])]  # the label as padded, and the separator
        body = Text(parts[1], style="bold" if host == SMDIST else "")
        self.console.print(Text.assemble((prefix, style), body), markup=False)
