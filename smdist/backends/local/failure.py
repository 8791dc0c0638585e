"""Why a job failed, in words a person can act on: the host and rank that failed, how it ended
(an exit code or a signal) and what that rank last wrote.

When one rank crashes its peers usually fail a moment later with connection errors, and the
launchers add summaries of their own. Only the launchers saw how a rank ended, so their word
comes first:

- torchrun's "Root Cause (first observed failure)" block: the global rank and its exit code,
  negative for a signal ("exitcode : -6 ... (SIGABRT)");
- mpirun's "mpirun noticed that process rank N ... exited on signal S" and its "Process name:
  [[job,1],N]" / "Exit code: C" report;
- for a plain process per host, the host's exit status (128 + N: killed by signal N).

A rank that failed on its own comes before one that was stopped (SIGTERM) or that reports a
peer going away or a collective timing out. What the rank wrote says what happened: the last
line of its traceback, else its last lines of output. Pure: log lines in, a ``Failure`` out.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
REASON_LINES = 3  # lines of output in the one-line reason when there is no traceback
REASON_LIMIT = 1024  # SageMaker's FailureReason holds at most 1024 characters


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True)
class Ending:
    """How a process ended: an exit code, or the signal that killed it."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def of_status(cls, status: int) -> Ending:
        """A status as torchrun and Popen report it: negative for a signal."""
        return cls(signal=-status) if status < 0 else cls(code=status)

    @classmethod
    def of_host_exit(cls, code: int) -> Ending:
        """A host's exit code from its init process, which reports signal N as 128 + N."""
        if code < 0:
            return cls(signal=-code)
        if code > 128 and code - 128 in set(signal.valid_signals()):
            return cls(signal=code - 128)
        return cls(code=code)

    @property
    def stopped(self) -> bool:
        return self.signal in STOP_SIGNALS

    def __str__(self) -> str:
        if self.signal is not None:
            return f"killed by {signal_name(self.signal)}"
        return f"exit code {self.code}"


@dataclass(frozen=True)
class Finding:
    """The last line of one traceback, and where it was printed."""

    sequence: int
    host: str
    rank: int | None
    message: str

    @property
    def is_consequence(self) -> bool:
        return _reports_peer_loss(self.message)

    @property
    def is_timeout(self) -> bool:
        return _reports_timeout(self.message)


@dataclass(frozen=True)
class Report:
    """A launcher's word on the rank that failed first."""

    sequence: int
    host: str
    rank: int | None
    ending: Ending | None


@dataclass(frozen=True)
class Failure:
    """The failing rank: where, how it ended, and what it wrote last."""

    host: str
    rank: int | None
    ending: Ending | None
    message: str | None  # the last line of its traceback, when it printed one
    last_lines: tuple[str, ...]

    @property
    def where(self) -> str:
        return self.host + (f" rank {self.rank}" if self.rank is not None else "")

    @property
    def is_consequence(self) -> bool:
        """Stopped, or failed because a peer went away or a collective timed out."""
        if self.ending is not None and self.ending.stopped:
            return True
        return _reports_peer_loss(self.message or " ".join(self.last_lines[-REASON_LINES:]))

    def summary(self) -> str:
        """``HOST rank R (HOW): WHAT``: where it failed, how it ended, what it said last."""
        how = f" ({self.ending})" if self.ending is not None else ""
        if self.message:
            what = self.message
        elif self.last_lines:
            shown = [_shorten(line, 300) for line in self.last_lines[-REASON_LINES:]]
            what = "its last output: " + " | ".join(shown)
        else:
            what = "it printed nothing"
        return f"{self.where}{how}: {what}"

    def reason(self) -> str:
        """One line: ``AlgorithmError: ExecuteUserScriptError on HOST rank R (HOW): WHAT``."""
        text = f"AlgorithmError: ExecuteUserScriptError on {self.summary()}"
        if self.message and _reports_peer_loss(self.message) and _reports_timeout(self.message):
            text += " (a collective timed out: another rank is probably hung or gone)"
        return _shorten(text, REASON_LIMIT)

    def details(self) -> str:
        """``output/failure``'s text: the reason, then the rank's last lines."""
        lines = "\n".join(self.last_lines) or "(nothing)"
        return f"{self.reason()}\n\nLast lines of {self.where}:\n{lines}\n"


def _reports_peer_loss(text: str) -> bool:
    return bool(_PEER_LOSS.search(text))


def _reports_timeout(text: str) -> bool:
    return "timed out" in text.lower() or "timeout" in text.lower()


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def _last_exception(findings: list[Finding], report: Report) -> Finding | None:
    """The exception the reported rank printed before the launcher's report."""
    before = [f for f in findings if f.host == report.host and f.sequence <= report.sequence]
    exact = [f for f in before if f.rank == report.rank]
    return (exact or [f for f in before if f.rank is None] or [None])[-1]


def diagnose(
    lines: list[Line],
    exit_codes: Mapping[str, int],
    failed_hosts: list[str],
    single_launcher: bool = False,
) -> Failure | None:
    """The failing rank of a job whose processes printed ``lines``.

    ``exit_codes``: each host's exit code; ``failed_hosts``: hosts that exited non-zero before
    the job was stopped, first first; ``single_launcher``: one mpirun ran every rank, so its
    exit code is no one rank's and any host's exception may be the cause.
    """
    findings = exceptions(lines)
    candidates: list[tuple[int, int, Failure]] = []  # (tier, order, failure)
    for report in launcher_reports(lines):
        finding = _last_exception(findings, report)
        until = report.sequence
        text = rank_lines(lines, report.host, report.rank, until)
        message = finding.message if finding else None
        failure = Failure(report.host, report.rank, report.ending, message, tuple(text))
        candidates.append((0, report.sequence, failure))
    if single_launcher:
        for finding in findings:
            text = tuple(rank_lines(lines, finding.host, finding.rank, finding.sequence))
            failure = Failure(finding.host, finding.rank, None, finding.message, text)
            candidates.append((1, finding.sequence, failure))
    for position, host in enumerate(failed_hosts):
        own = [f for f in findings if f.host == host]
        finding = ([f for f in own if not f.is_consequence] or own or [None])[0]
        code = exit_codes.get(host)
        ending = None if code is None or single_launcher else Ending.of_host_exit(code)
        rank = finding.rank if finding else None
        text = tuple(rank_lines(lines, host, rank))
        failure = Failure(host, rank, ending, finding.message if finding else None, text)
        order = finding.sequence if finding else len(lines) + position
        candidates.append((1 if finding else 2, order, failure))
    if not candidates:
        return None
    return min(candidates, key=lambda c: (c[2].is_consequence, c[0], c[1]))[2]


def root_cause(lines: list[Line], failed_hosts: list[str]) -> Finding | None:
    """The failing rank as a ``Finding`` (its message: its exception or last output)."""
    failure = diagnose(lines, {}, failed_hosts, single_launcher=True)
    if failure is None:
        return None
    message = failure.message or "its last output was: " + " | ".join(failure.last_lines[-1:])
    return Finding(0, failure.host, failure.rank, message)
