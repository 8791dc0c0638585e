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
peer going away or a collective timing out, even when only the peer's launcher reported (the
rank's own host was stopped before it noticed): then the first such error any rank printed
is the cause. What the rank wrote says what happened: the last
line of its traceback, else its last lines of output. Pure: log lines in, a ``Failure`` out.
The log reading is ``failure_evidence``'s, how a process ended ``process_endings``'s; this
module weighs what they found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from smdist.backends.local.failure_evidence import (
    Finding,
    Line,
    Report,
    exceptions,
    launcher_reports,
    rank_lines,
    reports_peer_loss,
    reports_timeout,
)
from smdist.backends.local.process_endings import STOP_SIGNALS, Ending, signal_name

REASON_LINES = 3  # lines of output in the one-line reason when there is no traceback
REASON_LIMIT = 1024  # SageMaker's FailureReason holds at most 1024 characters


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
        return reports_peer_loss(self.message or " ".join(self.last_lines[-REASON_LINES:]))

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
        if self.message and reports_peer_loss(self.message) and reports_timeout(self.message):
            text += " (a collective timed out: another rank is probably hung or gone)"
        return _shorten(text, REASON_LIMIT)

    def details(self) -> str:
        """``output/failure``'s text: the reason, then the rank's last lines."""
        lines = "\n".join(self.last_lines) or "(nothing)"
        return f"{self.reason()}\n\nLast lines of {self.where}:\n{lines}\n"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    _, order, chosen = min(candidates, key=lambda c: (c[2].is_consequence, c[0], c[1]))
    if chosen.is_consequence:
        return _unreported_cause(lines, findings, order) or chosen
    return chosen


def _unreported_cause(lines: list[Line], findings: list[Finding], before: int) -> Failure | None:
    """The first error printed before ``before`` that is not a peer's loss, by any rank: the
    cause when every rank the launchers and exit codes name failed only because a peer went
    away, since the rank that raised it may have been stopped before its launcher could report
    (its host slower to notice). How it ended is then unknown."""
    causes = [f for f in findings if not f.is_consequence and f.sequence < before]
    if not causes:
        return None
    first = causes[0]
    text = tuple(rank_lines(lines, first.host, first.rank, first.sequence))
    return Failure(first.host, first.rank, None, first.message, text)


def root_cause(lines: list[Line], failed_hosts: list[str]) -> Finding | None:
    """The failing rank as a ``Finding`` (its message: its exception or last output)."""
    failure = diagnose(lines, {}, failed_hosts, single_launcher=True)
    if failure is None:
        return None
    message = failure.message or "its last output was: " + " | ".join(failure.last_lines[-1:])
    return Finding(0, failure.host, failure.rank, message)


__all__ = [
    "REASON_LIMIT",
    "REASON_LINES",
    "STOP_SIGNALS",
    "Ending",
    "Failure",
    "Finding",
    "Line",
    "Report",
    "diagnose",
    "exceptions",
    "launcher_reports",
    "rank_lines",
    "root_cause",
    "signal_name",
]
