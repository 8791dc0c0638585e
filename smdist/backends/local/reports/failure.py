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
is the cause. What the rank wrote says what happened: the last line of its traceback, else
its last lines of output. Each other rank's own error is credited to that rank, and on a
host whose ranks shared their output (torchrun's workers) the lines no rank is known to
have written are the host's, not the failing rank's.

When the cause is only that a collective timed out or a peer went away, the rank the others
waited for is the one to name (``hung_rank``): one that is stopped (SIGSTOP), else one that
was running and said nothing while the others timed out. Pure: log lines (and the ranks as
the job saw them) in, a ``Failure`` out. The log reading is ``failure_evidence``'s, how a
process ended ``process_endings``'s; this module weighs what they found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from smdist.backends.local.processes.endings import STOP_SIGNALS, Ending, RankProcess, signal_name
from smdist.backends.local.reports.failure_evidence import (
    Finding,
    Line,
    Report,
    exceptions,
    launcher_reports,
    rank_lines,
    ranks_not_failed,
    reports_peer_loss,
    reports_timeout,
    shares_output,
)

REASON_LINES = 3  # lines of output in the one-line reason when there is no traceback
REASON_LIMIT = 1024  # SageMaker's FailureReason holds at most 1024 characters
OTHER_ERRORS = 8  # other ranks' errors listed in output/failure


@dataclass(frozen=True)
class Failure:
    """The failing rank: where, how it ended, and what it wrote last."""

    host: str
    rank: int | None
    ending: Ending | None
    message: str | None  # the last line of its traceback, when it printed one
    last_lines: tuple[str, ...]
    host_lines: tuple[str, ...] = ()  # its host's output, when several ranks shared it
    others: tuple[str, ...] = ()  # other ranks' own errors: "HOST rank R: ERROR"
    stuck: str | None = None  # "HOST rank R (pid N) is stopped ...": the rank others waited for
    noticed: str | None = None  # then: the failure that ended the job, of a rank that waited

    @property
    def where(self) -> str:
        return self.host + (f" rank {self.rank}" if self.rank is not None else "")

    @property
    def tells_anything(self) -> bool:
        """How it ended, what it wrote, or which rank hung: anything to say."""
        return bool(self.ending or self.message or self.stuck or self.last_lines or self.host_lines)

    @property
    def is_consequence(self) -> bool:
        """Stopped, or failed because a peer went away or a collective timed out."""
        if self.ending is not None and self.ending.stopped:
            return True
        return reports_peer_loss(self.message or " ".join(self.last_lines[-REASON_LINES:]))

    def summary(self) -> str:
        """``HOST rank R (HOW): WHAT``: where it failed, how it ended, what it said last."""
        if self.stuck:
            return f"{self.stuck}; first to give up: {self.noticed}" if self.noticed else self.stuck
        how = f" ({self.ending})" if self.ending is not None else ""
        if self.message:
            what = self.message
        elif self.last_lines or self.host_lines:
            last = self.last_lines or self.host_lines
            shown = [_shorten(line, 300) for line in last[-REASON_LINES:]]
            whose = "its" if self.last_lines else f"{self.host}'s"
            what = f"{whose} last output: " + " | ".join(shown)
            what += "" if self.last_lines else " (lines of all its ranks)"
        else:
            what = "it printed nothing"
        return f"{self.where}{how}: {what}"

    def reason(self) -> str:
        """One line: ``AlgorithmError: ExecuteUserScriptError on HOST rank R (HOW): WHAT``."""
        if self.stuck:
            return _shorten(
                f"AlgorithmError: ExecuteUserScriptError: {self.summary()}", REASON_LIMIT
            )
        text = f"AlgorithmError: ExecuteUserScriptError on {self.summary()}"
        if self.message and reports_peer_loss(self.message) and reports_timeout(self.message):
            text += " (a collective timed out: another rank is probably hung or gone)"
        return _shorten(text, REASON_LIMIT)

    def details(self, reason: str | None = None) -> str:
        """``output/failure``'s text: the reason, the rank's last lines, the other ranks' own
        errors, and the lines its host's ranks wrote without saying which."""
        apart = "(none told apart from its host's other ranks)" if self.host_lines else ""
        lines = "\n".join(self.last_lines) or apart or "(nothing)"
        text = f"{reason or self.reason()}\n\nLast lines of {self.where}:\n{lines}\n"
        if self.others:
            text += "\nErrors other ranks printed:\n" + "\n".join(self.others) + "\n"
        if self.host_lines:
            shared = "\n".join(self.host_lines)
            text += f"\nLast lines of {self.host}, its ranks' output not told apart:\n{shared}\n"
        return text


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
    ranks: Sequence[RankProcess] = (),
    seen: Sequence[RankProcess] = (),
) -> Failure | None:
    """The failing rank of a job whose processes printed ``lines``.

    ``exit_codes``: each host's exit code; ``failed_hosts``: hosts that exited non-zero before
    the job was stopped, first first; ``single_launcher``: one mpirun ran every rank, so its
    exit code is no one rank's and any host's exception may be the cause; ``ranks``: the
    job's ranks as they stood when its stop began, ``seen`` as seen while it ran.
    """
    findings = exceptions(lines)
    chosen = _choose(lines, findings, exit_codes, failed_hosts, single_launcher)
    if chosen is None:
        return None
    return _in_context(hung_rank(lines, ranks, chosen, seen) or chosen, lines, findings)


def _choose(
    lines: list[Line],
    findings: list[Finding],
    exit_codes: Mapping[str, int],
    failed_hosts: list[str],
    single_launcher: bool,
) -> Failure | None:
    """The rank whose failure came first, a rank that failed on its own before one that
    failed because of a peer."""
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


def _in_context(failure: Failure, lines: list[Line], findings: list[Finding]) -> Failure:
    """``failure`` with the other ranks' own errors, each credited to its rank, and its host's
    output when several ranks shared it."""
    shared = failure.rank is not None and shares_output(lines, failure.host)
    host_lines = tuple(rank_lines(lines, failure.host, None, shared=True)) if shared else ()
    seen = {(failure.host, failure.rank)}
    others = []
    for finding in findings:
        source = (finding.host, finding.rank)
        said = finding.host == failure.host and finding.message == failure.message
        if finding.is_consequence or source in seen or said:
            continue
        seen.add(source)
        where = finding.host + (f" rank {finding.rank}" if finding.rank is not None else "")
        others.append(f"{where}: {finding.message}")
    return replace(failure, host_lines=host_lines, others=tuple(others[:OTHER_ERRORS]))


def hung_rank(
    lines: list[Line],
    ranks: Sequence[RankProcess],
    noticed: Failure | None = None,
    seen: Sequence[RankProcess] = (),
) -> Failure | None:
    """The rank the others waited for, named instead of ``noticed`` (the rank whose timeout or
    lost peer ended the job; None: the job stalled): a stopped one, else ranks that were
    running and printed no error while the others' collectives timed out (no more of them
    than ranks that timed out, or nothing is singled out); ``seen``: as seen while it ran."""
    if noticed is not None and not noticed.is_consequence:
        return None
    stopped = [rank for rank in ranks if rank.stopped]
    if stopped:
        stuck = ", ".join(map(str, stopped)) + " and the other ranks waited for "
        stuck += "it" if len(stopped) == 1 else "them"
        return _stuck(lines, stopped[0], stuck, noticed)
    if noticed is None:
        return None
    findings = exceptions(lines)
    timed_out = {(f.host, f.rank) for f in findings if f.is_timeout}
    spoke = {(f.host, f.rank) for f in findings} | {(noticed.host, noticed.rank)}
    running = ranks_not_failed(lines, ranks, seen)
    hung = [rank for source, rank in running.items() if source not in spoke]
    if not hung or len(hung) > len(timed_out):
        return None
    names = ", ".join(f"{rank.where} (pid {rank.pid})" for rank in hung)
    one = len(hung) == 1
    stuck = f"{names} {'is' if one else 'are'} probably hung: {'it was' if one else 'they were'}"
    stuck += " running and printed no error while the other ranks timed out"
    return _stuck(lines, hung[0], stuck, noticed)


def _stuck(lines: list[Line], rank: RankProcess, stuck: str, noticed: Failure | None) -> Failure:
    said = noticed.summary() if noticed is not None else None
    text = tuple(rank_lines(lines, rank.host, rank.rank))
    return Failure(rank.host, rank.rank, None, None, text, stuck=stuck, noticed=said)


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
    "hung_rank",
    "launcher_reports",
    "rank_lines",
    "root_cause",
    "signal_name",
]
