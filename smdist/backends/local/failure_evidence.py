"""What the hosts' log lines say about a failure: the last line of every traceback
(``Finding``), the launchers' word on the rank that failed first (``Report``: torchrun's Root
Cause block, mpirun's reports), and the lines one rank wrote, without the launchers' own."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from smdist.backends.local.process_endings import Ending

# (sequence, host, rank from the launcher's tag or None, text): JobLog.recent's entries.
Line = tuple[int, str, int | None, str]

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
# torch.distributed prefixes what a worker prints when it dies with its rank.
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?(.*)$")
# torchrun's report of the worker that failed first.
_ROOT_CAUSE = "Root Cause (first observed failure):"
_FIELD = re.compile(r"^\s*(rank|exitcode)\s*:\s*(-?\d+)")
_BLOCK_END = re.compile(r"^={10,}\s*$")
# mpirun's reports of the rank that failed first.
_MPI_SIGNAL = re.compile(
    r"mpirun noticed that process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)"
)
_MPI_FAILED_RANK = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\]")
_MPI_EXIT_CODE = re.compile(r"^\s*Exit code:\s*(-?\d+)")
# Launchers' own lines, never what a rank wrote: torch's log lines ("W1123 10:42:02.816000
# 7030 torch/distributed/run.py:874] ..."), torchrun's OMP_NUM_THREADS banner, smdist's
# launcher echoing its command.
_LAUNCHER_LINE = re.compile(
    r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\]|^\*+\s*$|"
    r"^Setting OMP_NUM_THREADS environment variable|^smdist-launcher: host \S+: "
)


@dataclass(frozen=True)
class Finding:
    """The last line of one traceback, and where it was printed."""

    sequence: int
    host: str
    rank: int | None
    message: str

    @property
    def is_consequence(self) -> bool:
        return reports_peer_loss(self.message)

    @property
    def is_timeout(self) -> bool:
        return reports_timeout(self.message)


@dataclass(frozen=True)
class Report:
    """A launcher's word on the rank that failed first."""

    sequence: int
    host: str
    rank: int | None
    ending: Ending | None


def reports_peer_loss(text: str) -> bool:
    return bool(_PEER_LOSS.search(text))


def reports_timeout(text: str) -> bool:
    return "timed out" in text.lower() or "timeout" in text.lower()


def _unprefixed(rank: int | None, text: str) -> tuple[int | None, str]:
    match = _RANK_PREFIX.match(text)
    if match:
        return int(match.group(1)), match.group(2)
    return rank, text


def exceptions(lines: Iterable[Line]) -> list[Finding]:
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


def launcher_reports(lines: list[Line]) -> list[Report]:
    """torchrun's root causes and mpirun's first failed rank, in output order."""
    reports: list[Report] = []
    blocks: dict[str, dict[str, int]] = {}  # host -> fields of an open Root Cause block
    tagged = {(host, rank) for _, host, rank, _ in lines if rank is not None}
    for index, (sequence, host, rank, text) in enumerate(lines):
        if rank is not None:
            continue  # a rank's own (tagged) output, not a launcher's
        if text.strip() == _ROOT_CAUSE:
            blocks[host] = {}
        elif host in blocks:
            field = _FIELD.match(text)
            if field:
                blocks[host][field.group(1)] = int(field.group(2))
            elif _BLOCK_END.match(text):
                found = blocks.pop(host)
                status = found.get("exitcode")
                ending = None if status is None else Ending.of_status(status)
                reports.append(Report(sequence, host, found.get("rank"), ending))
        noticed = _MPI_SIGNAL.search(text)
        failed = _MPI_FAILED_RANK.search(text)
        if noticed or failed:
            failed_rank = int((noticed or failed).group(1))  # type: ignore[union-attr]
            ending = Ending(signal=int(noticed.group(3))) if noticed else None
            for _, _, _, following in lines[index + 1 : index + 4] if failed else []:
                code = _MPI_EXIT_CODE.match(following)
                if code:
                    ending = Ending.of_status(int(code.group(1)))
            # The rank's tagged output names the host it ran on; else mpirun's node name.
            ran_on = [h for h, r in sorted(tagged) if r == failed_rank]
            node = noticed.group(2) if noticed else None
            known = {h for _, h, _, _ in lines}
            where = ran_on[0] if ran_on else (node if node in known else host)
            reports.append(Report(sequence, where, failed_rank, ending))
    return reports


def _launcher_sequences(lines: list[Line]) -> set[int]:
    """Lines a launcher wrote, on any host: torchrun's own traceback and failure block, its
    log lines and banners, mpirun's boxed messages."""
    noise: set[int] = set()
    tracebacks: dict[str, list[int]] = {}  # host -> an open untagged traceback
    blocks: dict[str, bool] = {}  # host -> inside torchrun's failure block: Root Cause seen?
    boxes: set[str] = set()  # hosts inside an mpirun box of dashes
    for sequence, host, rank, text in lines:
        if rank is not None:
            continue
        stripped = text.strip()
        if host in blocks:
            noise.add(sequence)
            if stripped == _ROOT_CAUSE:
                blocks[host] = True
            elif blocks[host] and _BLOCK_END.match(text):
                del blocks[host]
        elif _LAUNCHER_LINE.match(text) or not stripped:
            noise.add(sequence)
        elif re.fullmatch(r"-{20,}", stripped):
            noise.add(sequence)
            boxes.symmetric_difference_update({host})
        elif host in boxes:
            noise.add(sequence)
        elif stripped.startswith("Traceback (most recent call last)"):
            tracebacks[host] = [sequence]
        elif host in tracebacks:
            tracebacks[host].append(sequence)
            if not text.startswith((" ", "\t")) and _EXCEPTION.match(stripped):
                if _WRAPPER.search(stripped):  # the launcher's own traceback
                    noise.update(tracebacks[host])
                    if "ChildFailedError" in stripped:
                        blocks[host] = False
                del tracebacks[host]
    return noise


def rank_lines(
    lines: list[Line], host: str, rank: int | None, until: int | None = None, count: int = 30
) -> list[str]:
    """The last ``count`` lines ``rank`` on ``host`` wrote (up to sequence ``until``).

    A launcher that tags every line (mpirun) says which rank wrote it; under torchrun only
    tracebacks carry ``[rankN]:``, so the host's untagged lines count as the rank's too.
    """
    noise = _launcher_sequences(lines)
    tagged = rank is not None and any(h == host and r == rank for _, h, r, _ in lines)
    selected = []
    for sequence, line_host, line_rank, text in lines:
        if line_host != host or sequence in noise or (until is not None and sequence > until):
            continue
        if tagged and line_rank != rank:
            continue
        own_rank, own_text = _unprefixed(line_rank, text)
        if rank is None or own_rank is None or own_rank == rank:
            if own_text.strip():
                selected.append(own_text.rstrip())
    return selected[-count:]
