"""A job's Slurm output as ``<node> | <text>`` lines, read on from where the last read stopped.

``srun --label`` puts the task number in front of every line a node's step prints
(``1: text``); the batch step announces each run's nodes in order (``smdist-slurm: job 12,
run 2, on node1,node2``), so task K of the run is its K-th node (one task per node). The batch
step's own lines, and srun's, are ``batch | <text>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

RUN_LINE = re.compile(r"^smdist-slurm: job \d+, run \d+, on (?P<hosts>\S*)$")
TASK_LINE = re.compile(r"^\s*(?P<task>\d+): (?P<text>.*)$")
BATCH = "batch"
ERROR_LINE = re.compile(r"(\b\w*(Error|Exception)\b|\berror:|Traceback)")


class LogReader:
    """Reads a log through ``read(offset)`` (bytes from there, None: no file yet) and gives
    its complete lines once each, labelled with their node."""

    def __init__(self, read: Callable[[int], bytes | None]) -> None:
        self._read = read
        self.offset = 0
        self.hosts: list[str] = []
        self.found = False  # the log exists

    def lines(self, final: bool = False) -> list[str]:
        """The lines written since the last call (``final``: the last one even unfinished)."""
        chunk = self._read(self.offset)
        if chunk is None:
            return []
        self.found = True
        complete = chunk if final else chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        text = complete.decode("utf-8", "replace")
        return [self.label(line) for line in text.splitlines()]

    def label(self, line: str) -> str:
        run = RUN_LINE.match(line)
        if run:
            self.hosts = [host for host in run.group("hosts").split(",") if host]
        task = TASK_LINE.match(line)
        if task is None:
            return f"{BATCH} | {line}"
        index = int(task.group("task"))
        host = self.hosts[index] if index < len(self.hosts) else f"task {index}"
        return f"{host} | {task.group('text')}"


def last_error(lines: list[str]) -> str | None:
    """The last line that reads like an error, for a failure reason."""
    for line in reversed(lines):
        if ERROR_LINE.search(line):
            return line.strip()
    return None
