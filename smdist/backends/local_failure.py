"""Why a job failed, in one line: the root cause among the errors of every process.

When one rank crashes, its peers usually fail a moment later with connection errors, and the
launchers (torchrun, mpirun, horovodrun) add their own summaries. SageMaker reports the user's
error (``FailureReason``); so does this: the earliest exception that is neither a launcher's
wrapper nor a peer reporting that someone else went away; failing that, the earliest of those;
failing that, the failing host's last error line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# The last line of a Python traceback: "ValueError: ...", "torch.distributed.DistError: ...".
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::.*)?$"
)
# Launchers reporting that a child failed: never the root cause.
_WRAPPER = re.compile(
    r"ChildFailedError|SignalException|CalledProcessError|HorovodInternalError|"
    r"SystemExit|KeyboardInterrupt|^torch\.distributed\.elastic\."
)
# A process reporting that a peer went away or stalled: a consequence, usually.
_PEER_LOSS = re.compile(
    r"Connection (?:closed|reset) by peer|ECONNRESET|Broken pipe|Connection refused|"
    r"DistNetworkError|DistStoreError|NCCL communicator was aborted|timed out|timeout|"
    r"Socket Timeout|failed to recv|Gloo connectFullMesh|stopped by SIGTERM|"
    r"Terminating remaining workers",
    re.IGNORECASE,
)
_ERRORISH = re.compile(r"error|exception|failed|fatal|abort|killed", re.IGNORECASE)
# mpirun's report of the first rank that exited non-zero: "Process name: [[26363,1],1]".
_MPI_FAILED_RANK = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\]")
# Launchers' own summaries, which say that something failed but not what.
_BANNER = re.compile(
    r"non-zero exit code|has been aborted|exited with non-zero status|ChildFailedError|"
    r"Terminating remaining workers|exit with status code"
)
# torch.distributed prefixes what a worker prints when it dies with its rank.
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?(.*)$")


def _unprefixed(rank: int | None, text: str) -> tuple[int | None, str]:
    match = _RANK_PREFIX.match(text)
    if match:
        return int(match.group(1)), match.group(2)
    return rank, text


@dataclass(frozen=True)
class Finding:
    sequence: int
    host: str
    rank: int | None
    message: str

    @property
    def is_consequence(self) -> bool:
        return bool(_PEER_LOSS.search(self.message))

    @property
    def is_timeout(self) -> bool:
        return "timed out" in self.message.lower() or "timeout" in self.message.lower()


def exceptions(lines: Iterable[tuple[int, str, int | None, str]]) -> list[Finding]:
    """The final line of every traceback, per (host, rank) source, in output order."""
    open_tracebacks: set[tuple[str, int | None]] = set()
    found = []
    for sequence, host, line_rank, line in lines:
        rank, text = _unprefixed(line_rank, line)
        stripped = text.strip()
        source = (host, rank)
        if stripped.startswith("Traceback (most recent call last)"):
            open_tracebacks.add(source)
        elif source in open_tracebacks and not text.startswith((" ", "\t")):
            if _EXCEPTION.match(stripped):
                open_tracebacks.discard(source)
                if not _WRAPPER.search(stripped):
                    found.append(Finding(sequence, host, rank, stripped))
    return found


def root_cause(
    lines: list[tuple[int, str, int | None, str]], failed_hosts: list[str]
) -> Finding | None:
    """The most likely root cause among the exceptions printed on ``failed_hosts``."""
    findings = [f for f in exceptions(lines) if f.host in failed_hosts]
    primary = [f for f in findings if not f.is_consequence]
    chosen = primary or findings
    if chosen:
        return min(chosen, key=lambda f: f.sequence)
    # No traceback: mpirun names the rank that failed first; else the last error-looking line
    # of a failed host that is not a launcher's banner.
    for _, _, _, text in reversed(lines):
        match = _MPI_FAILED_RANK.search(text)
        if match:
            rank = int(match.group(1))
            said = [(s, h, t) for s, h, r, t in lines if r == rank and t.strip()]
            if said:
                at, host, last = said[-1]
                return Finding(at, host, rank, f"its last output was: {last.strip()}")
    for host in failed_hosts:
        for sequence, line_host, rank, text in reversed(lines):
            if line_host == host and _ERRORISH.search(text) and not _BANNER.search(text):
                return Finding(sequence, host, rank, text.strip())
    return None


def last_lines(lines: list[tuple[int, str, int | None, str]], host: str, count: int = 30) -> str:
    selected = [
        (f"[rank {rank}] {text}" if rank is not None else text)
        for _, line_host, rank, text in lines
        if line_host == host
    ]
    return "\n".join(selected[-count:])
