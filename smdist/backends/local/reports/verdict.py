"""A finished local job in SageMaker's terms: its status and failure reason from the
supervisor's outcome, and the failing host's ``output/failure`` file."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from smdist.backends.base import JobStatus
from smdist.backends.local.processes.supervisor import MAX_RUN, REQUESTED, STALL
from smdist.backends.local.reports.failure import Failure, diagnose, hung_rank, rank_lines

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.processes.supervisor import Outcome
    from smdist.backends.local.reports.logs import JobLog


def conclude(
    outcome: Outcome,
    log: JobLog,
    hosts: list[EmulatedHost],
    single_launcher: bool,
    keep_outputs: Callable[[bool], tuple[str | None, list[str]]],
) -> tuple[JobStatus, str | None, str | None]:
    """(status, reason, model) of a finished job: the verdict on its outcome, the failing
    host's ``output/failure`` written, and the outputs kept (``keep_outputs(keep_model)``: the
    model's URI, what could not be kept). A job whose output is not whole failed."""
    status, reason, failing_host = judge(outcome, log, hosts, single_launcher)
    if failing_host is not None:
        try:
            write_failure_file(hosts, failing_host, reason or "")
        except OSError as error:  # the reason is in the log and the record anyway
            log.note(f"[end] could not write the failing host's output/failure: {error}")
    model, unkept = keep_outputs(status in (JobStatus.COMPLETED, JobStatus.STOPPED))
    if unkept:  # a full disk, a read-only folder: the job's output is not whole
        status = JobStatus.FAILED
        more = f" (and {len(unkept) - 1} more, in the log)" if len(unkept) > 1 else ""
        reason = reason or f"could not keep the job's output: {unkept[0]}{more}"
    return status, reason, model


def judge(
    outcome: Outcome, log: JobLog, hosts: list[EmulatedHost], single_launcher: bool
) -> tuple[JobStatus, str | None, Failure | None]:
    """The job's status, its failure reason, and the failing rank (for output/failure).

    ``single_launcher``: one launcher (mpirun) ran every host's ranks, so any host's ranks may
    hold the cause.
    """
    if outcome.stop_cause == REQUESTED:
        return JobStatus.STOPPED, outcome.stop_detail or "stop requested", None
    if outcome.stop_cause == MAX_RUN:
        return JobStatus.STOPPED, f"MaxRuntimeExceeded: {outcome.stop_detail}", None
    if outcome.succeeded:
        return JobStatus.COMPLETED, None, None
    # What the hosts' processes wrote; smdist's own notes say nothing about a rank.
    host_names = [host.name for host in hosts]
    lines = [line for line in log.recent if line[1] in host_names]
    if outcome.stop_cause == STALL:
        reason = (
            f"AlgorithmError: the job stalled: {outcome.stop_detail}; a process is "
            "probably hung (raise stall_timeout if it was only slow)"
        )
        stopped = hung_rank(lines, outcome.ranks or ())
        if stopped is not None:  # a stopped rank is why nothing printed
            return JobStatus.FAILED, f"{reason}; {stopped.stuck}", stopped
        main = hosts[0].name
        said = tuple(rank_lines(lines, main, None))
        return JobStatus.FAILED, reason, Failure(main, None, None, None, said)
    failure = diagnose(
        lines, outcome.exit_codes, outcome.failed_hosts, single_launcher, outcome.ranks or (),
        outcome.seen_ranks,
    )  # fmt: skip
    if failure is None or not failure.tells_anything:
        # Nothing ran far enough to say anything (a host process could not start).
        first = outcome.failed_hosts[0] if outcome.failed_hosts else hosts[0].name
        reason = f"AlgorithmError: {outcome.stop_detail or 'a process failed'}"
        return JobStatus.FAILED, reason, Failure(first, None, None, None, ())
    return JobStatus.FAILED, failure.reason(), failure


def write_failure_file(hosts: list[EmulatedHost], failure: Failure, reason: str) -> None:
    """``output/failure`` of the failing host, as SageMaker keeps it: the reason, then what the
    failing rank wrote last (and the other ranks' own errors: ``Failure.details``)."""
    by_name = {host.name: host for host in hosts}
    host = by_name.get(failure.host, hosts[0])
    host.failure_file.parent.mkdir(parents=True, exist_ok=True)
    host.failure_file.write_text(failure.details(reason))


def summary_line(
    status: JobStatus, elapsed: float, reason: str | None, model_artifacts: str | None
) -> str:
    """The log's last line: ``STATUS in N s[: reason][; model artifacts URI]``."""
    summary = f"{status.value} in {elapsed:.1f} s"
    if reason:
        summary += f": {reason}"
    if model_artifacts:
        summary += f"; model artifacts {model_artifacts}"
    return summary
