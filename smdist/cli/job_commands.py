"""``smdist status``, ``logs``, ``stop`` and ``jobs``: a job any backend knows, by name
(``job_lookup``), shown, followed or stopped through its ``JobView``; the jobs a backend lists.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from smdist.backends import registry
from smdist.cli import job_lookup, terminal
from smdist.cli import options as opt
from smdist.cli.assignments import LOCAL_ROOT


def _lookup(root: Any, region: str | None, poll: float | None = None) -> dict[str, Any]:
    """The lookup flags, for each backend to take those its options have."""
    return {"root": root, "region": region, "poll_seconds": poll}


def status(
    job_name: opt.JobName,
    region: opt.RegionOption = None,
    as_json: opt.DescribeJsonFlag = False,
    backend: opt.BackendOption = job_lookup.AUTO,
    root: opt.RootOption = LOCAL_ROOT,
) -> None:
    """Show a job's status (local or SageMaker): exit 0 running or completed, 1 failed/stopped."""
    job = job_lookup.find(job_name, backend, _lookup(root, region))
    if as_json:
        typer.echo(json.dumps(job.status_document(), indent=2, default=str))
    else:
        typer.echo("\n".join(job.status_lines()))
    raise typer.Exit(job.exit_code)


def logs(
    job_name: opt.JobName,
    follow: opt.FollowFlag = False,
    region: opt.RegionOption = None,
    poll: opt.LookupPollOption = None,
    backend: opt.BackendOption = job_lookup.AUTO,
    root: opt.RootOption = LOCAL_ROOT,
    training_job: opt.TrainingJobOption = None,
) -> None:
    """Print a job's logs (local, or SageMaker's CloudWatch), each line prefixed with its host."""
    found = job_lookup.find(job_name, backend, _lookup(root, region, poll))
    console = terminal.stderr()
    job = found.trial(training_job, lambda line: terminal.plain(console, line))
    for line in job.logs(follow):
        typer.echo(line)
    if follow:
        raise typer.Exit(job.exit_code)


def stop(
    job_name: opt.JobName,
    wait: opt.StopWaitFlag = False,
    region: opt.RegionOption = None,
    poll: opt.LookupPollOption = None,
    backend: opt.BackendOption = job_lookup.AUTO,
    root: opt.RootOption = LOCAL_ROOT,
) -> None:
    """Stop a job: SIGTERM, then SIGKILL after the grace period (SageMaker: 120 s)."""
    job = job_lookup.find(job_name, backend, _lookup(root, region, poll))
    console = terminal.stderr()
    job.stop(
        lambda line: terminal.plain(console, line),
        wait=wait,
        poll=poll or 10.0,
        report_end=terminal.report_end,
    )


def jobs(
    root: opt.RootOption = LOCAL_ROOT,
    as_json: opt.JobsJsonFlag = False,
    backend: opt.JobsBackendOption = registry.DEFAULT_BACKEND,
    region: opt.RegionOption = None,
) -> None:
    """List the jobs a backend keeps (default: local jobs and studies under --root), newest
    first (exit 0)."""
    # lazy: the listing, for this command only
    from smdist.cli.job_list import list_jobs

    chosen = registry.get(backend, "--backend")
    found = chosen.list(job_lookup.options_for(chosen, _lookup(root, region)))
    where = f"{backend} jobs or studies under {root}"
    raise typer.Exit(list_jobs(found, where, as_json))
