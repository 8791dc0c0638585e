"""What the hosts' log lines say about a failure: the last line of every traceback
(``Finding``), the launchers' word on the rank that failed first (``Report``: torchrun's Root
Cause block, mpirun's reports) and on every worker it stopped, and the lines one rank wrote,
without the launchers' own.

torchrun's workers of one host share its output. Only what torch prefixes with ``[rankN]:`` (a
traceback, once the process group is up) says which rank wrote it; on a host that ran several
ranks, the other lines are the host's, never credited to one of its ranks."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from smdist.backends.local.processes.endings import Ending, RankProcess

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
# A worker in torchrun's failure block: "rank : 3 (local_rank: 1)", "exitcode : -15 (pid: 5)".
_WORKER = re.compile(r"^\s*rank\s*:\s*(\d+)(?:\s*\(local_rank:\s*(\d+)\))?")
_WORKER_PID = re.compile(r"\(pid:\s*(\d+)\)")
# torchrun stopping a worker of its own accord (another worker failed, or it was stopped).
_CLOSING = re.compile(r"torch/distributed/elastic/.*\] Sending process (\d+) closing signal")
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
    local_rank: int | None = None
    pid: int | None = None


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


def launcher_workers(lines: list[Line]) -> list[Report]:
    """Every worker torchrun's failure blocks list (its other failures and its root cause):
    host, rank, local rank, pid and how it ended."""
    workers: list[Report] = []
    inside: set[str] = set()  # hosts within a failure block
    opened: dict[str, tuple[int, int | None]] = {}  # host -> (rank, local rank) of an entry
    for sequence, host, rank, text in lines:
        if rank is not None:
            continue
        if text.strip() in ("Failures:", _ROOT_CAUSE):
            inside.add(host)
        elif host in inside and _BLOCK_END.match(text):
            inside.discard(host)
        elif host in inside and (worker := _WORKER.match(text)):
            local = worker.group(2)
            opened[host] = (int(worker.group(1)), int(local) if local is not None else None)
        elif host in opened and (field := _FIELD.match(text)) and field.group(1) == "exitcode":
            worker_rank, local_rank = opened.pop(host)
            ending = Ending.of_status(int(field.group(2)))
            pid = int(found.group(1)) if (found := _WORKER_PID.search(text)) else None
            workers.append(Report(sequence, host, worker_rank, ending, local_rank, pid))
    return workers


def closed_workers(lines: list[Line]) -> list[Report]:
    """The workers torchrun stopped itself (it sent them a closing signal), whatever their exit
    status then (a handler of SIGTERM may exit 0): they had not failed on their own."""
    closed = _closed_pids(lines)
    return [w for w in launcher_workers(lines) if (w.host, w.pid) in closed]


def _closed_pids(lines: list[Line]) -> set[tuple[str, int]]:
    """(host, pid as the host numbers it) of every process torchrun sent a closing signal."""
    return {(host, int(m.group(1))) for _, host, _, text in lines if (m := _CLOSING.search(text))}


def ranks_not_failed(
    lines: list[Line], ranks: Iterable[RankProcess], seen: Iterable[RankProcess] = ()
) -> dict[tuple[str, int | None], RankProcess]:
    """(host, rank) -> process of every rank that was running until the job's stop (``ranks``,
    as the stop found them) or until its own torchrun closed it: one its failure block lists,
    or, where that block never printed (torchrun was stopped first), one whose pid the closing
    line names and ``seen`` (the ranks as seen while the job ran) knows."""
    running: dict[tuple[str, int | None], RankProcess] = {}
    for host, rank, pid in ((w.host, w.rank, w.pid) for w in closed_workers(lines)):
        if pid is not None:
            running[(host, rank)] = RankProcess(host, rank, pid, False)
    closed = _closed_pids(lines)
    for rank in seen:
        if rank.rank is not None and (rank.host, rank.pid) in closed:
            running.setdefault((rank.host, rank.rank), rank)
    running.update({(r.host, r.rank): r for r in ranks if r.rank is not None})
    return running


def shares_output(lines: list[Line], host: str) -> bool:
    """Whether several ranks wrote ``host``'s untagged output (torchrun's workers): torch's
    ``[rankN]:`` prefixes of more than one rank, or torchrun reporting a local rank past 0."""
    prefixed = {
        int(found.group(1))
        for _, line_host, rank, text in lines
        if line_host == host and rank is None and (found := _RANK_PREFIX.match(text))
    }
    workers = [w for w in launcher_workers(lines) if w.host == host]
    if any(worker.local_rank for worker in workers):
        return True
    return len(prefixed | {worker.rank for worker in workers}) > 1


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
    lines: list[Line],
    host: str,
    rank: int | None,
    until: int | None = None,
    count: int = 30,
    shared: bool = False,
) -> list[str]:
    """The last ``count`` lines ``rank`` on ``host`` wrote (up to sequence ``until``).

    A launcher that tags every line (mpirun) says which rank wrote it; under torchrun only
    tracebacks carry ``[rankN]:``, so the host's untagged lines count as the rank's too, unless
    several ranks wrote them (``shares_output``). ``shared``: only those lines, no rank's own.
    """
    noise = _launcher_sequences(lines)
    tagged = rank is not None and any(h == host and r == rank for _, h, r, _ in lines)
    apart = rank is not None and not tagged and shares_output(lines, host)
    selected = []
    for sequence, line_host, line_rank, text in lines:
        if line_host != host or sequence in noise or (until is not None and sequence > until):
            continue
        if tagged and line_rank != rank:
            continue
        own_rank, own_text = _unprefixed(line_rank, text)
        if shared:
            wanted = own_rank is None
        else:
            wanted = rank is None or own_rank == rank or (own_rank is None and not apart)
        if wanted and own_text.strip():
            selected.append(own_text.rstrip())
    return selected[-count:]
