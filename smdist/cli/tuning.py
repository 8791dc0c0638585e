"""``smdist tune JOB_FILE``: the job's ``tuning:`` search, as a SageMaker tuning job or here.

Without ``--local`` the search is a SageMaker hyperparameter tuning job made from the same plan
``submit`` sends (``backends.sagemaker.tuning``): ``--dry-run`` prints its request as JSON on
stdout and calls no AWS API; otherwise the tuning job's name goes to stdout, and with
``--wait`` the best training job (objective, hyperparameters, model) once the search ends.
With ``--local`` the trials run on this machine (``smdist.cli.tuning_local``).

Exit codes follow ``smdist.exit_codes``: 0 the search completed (or was created, or the dry
run shown), 1 it failed or was stopped, 2 a job file without a valid ``tuning:`` section or
another problem to fix before anything runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from smdist.cli import options as opt
from smdist.cli import terminal
from smdist.cli.job_files import load_plan
from smdist.cli.local import LOCAL_ROOT
from smdist.errors import OPTION, Problem, SpecError
from smdist.planning.cost_text import search_cost_line

TuneWaitFlag = Annotated[
    bool,
    typer.Option("--wait", help="wait for the search; print the best trial; exit 1 if it fails"),
]
TuneDryRunFlag = Annotated[
    bool,
    typer.Option(
        "--dry-run", help="print the CreateHyperParameterTuningJob request; call no AWS API"
    ),
]
TuneLocalFlag = Annotated[
    bool, typer.Option("--local", help="run the trials on this machine (emulated hosts)")
]
ParallelOption = Annotated[
    int | None,
    typer.Option("--parallel", min=1, help="--local: trials at a time (default: the spec's)"),
]
TuneFreshFlag = Annotated[
    bool,
    typer.Option(
        "--fresh",
        help="--local: start the search over, its trials without earlier checkpoints (the "
        "earlier search is set aside, not deleted)",
    ),
]
TuneHostsOption = Annotated[
    int | None,
    typer.Option("--hosts", min=1, help="--local: emulated hosts (default: instance_count)"),
]


def tune_command(
    job_file: opt.JobFile,
    dry_run: TuneDryRunFlag = False,
    wait: TuneWaitFlag = False,
    local: TuneLocalFlag = False,
    bucket: opt.BucketOption = None,
    role: opt.RoleOption = None,
    region: opt.RegionOption = None,
    poll: opt.PollOption = 30.0,
    parallel: ParallelOption = None,
    hosts: TuneHostsOption = None,
    fresh: TuneFreshFlag = False,
    root: opt.RunRootOption = LOCAL_ROOT,
) -> None:
    """Search the job's tuning: hyperparameters (SageMaker tuning job, or --local here)."""
    # lazy: the SageMaker backend, for tune only (--help stays quick)
    from smdist.backends.sagemaker.tuning.request import require_tuning

    _check_options(
        local,
        sagemaker_only={"--dry-run": dry_run, "--bucket": bucket, "--role": role,
                        "--region": region},
        local_only={"--parallel": parallel, "--hosts": hosts, "--fresh": fresh},
    )  # fmt: skip
    plan = load_plan(job_file)
    require_tuning(plan)  # exit 2 naming the field, before any AWS call
    console = terminal.stderr()
    for warning in plan.warnings:
        terminal.warn(console, warning)
    if local:
        raise typer.Exit(_tune_locally(plan, console, root, parallel, hosts, fresh))
    terminal.plain(console, search_cost_line(plan, plan.spec.tuning))  # before anything is sent
    if dry_run:
        _show_dry_run(plan, console, bucket=bucket, role=role, region=region)
        return
    # lazy: the SageMaker backend and packaging, for a launch only
    from smdist.backends.sagemaker import tuning
    from smdist.packaging.bundle import upload_notice

    for line in upload_notice(plan):  # before the upload, so a mistake can be stopped
        terminal.plain(console, line)
    job = tuning.launch(plan, bucket=bucket, role=role, region=region, poll_seconds=poll)
    typer.echo(job.name)
    if job.source_uri is not None and job.uploaded_bytes is not None:
        done = f"uploaded {job.uploaded_bytes} bytes" if job.uploaded_bytes else "unchanged"
        terminal.plain(console, f"code: {done} ({job.source_uri})")
    if not wait:
        terminal.plain(
            console,
            f"{job.name}: follow it with `smdist status {job.name}`, stop it with "
            f"`smdist stop {job.name}`",
        )
        return
    status = job.wait(echo=lambda line: terminal.plain(console, line))
    show_best(job)
    raise typer.Exit(status.exit_code)


def _check_options(local: bool, sagemaker_only: dict[str, Any], local_only: dict[str, Any]) -> None:
    """Every option set that the chosen place does not use: exit 2, nothing dropped."""
    if local:
        wrong = [name for name, value in sagemaker_only.items() if value]
        why, valid = "is for a SageMaker tuning job; --local searches here", "leave out --local"
    else:
        wrong = [name for name, value in local_only.items() if value]
        why, valid = "is for a search here (--local)", "add --local, or leave the option out"
    if wrong:
        raise SpecError([Problem(name, why, None, valid) for name in wrong], OPTION)


def _tune_locally(
    plan: Any, console: Any, root: Path, parallel: int | None, hosts: int | None, fresh: bool
) -> int:
    # lazy: the search's table and results, for --local only (smdist --help imports this module)
    from smdist.cli import tuning_local

    return tuning_local.run(
        plan, console=console, root=root, parallel=parallel, hosts=hosts, fresh=fresh
    )


def _show_dry_run(
    plan: Any, console: Any, bucket: str | None, role: str | None, region: str | None
) -> None:
    """The request on stdout as JSON; its notes and what would ship on stderr."""
    # lazy: the SageMaker backend and packaging, for a dry run only
    from smdist.backends.sagemaker import tuning
    from smdist.packaging.bundle import dry_run_lines

    shown = tuning.dry_run(plan, bucket=bucket, role=role, region=region)
    typer.echo(json.dumps(shown.to_dict(), indent=2, default=str))
    for note in shown.warnings[len(plan.warnings) :]:  # the dry run's own, e.g. its region
        terminal.plain(console, f"note: {note}")
    for line in dry_run_lines(plan):
        terminal.plain(console, line)


def show_best(job: Any) -> None:
    """The best trial on stdout: its name, objective, tuned hyperparameters and model."""
    best = job.best
    if best is None:
        typer.echo(f"{job.name}: no trial completed with an objective value")
        return
    metric = _objective_metric(job)
    typer.echo(f"best: {best.name}")
    typer.echo(f"objective: {metric} = {best.objective}")
    typer.echo(f"hyperparameters: {json.dumps(best.values, sort_keys=True)}")
    typer.echo(f"model: {best.model or 'none yet'}")


def _objective_metric(job: Any) -> str:
    config = job.describe().get("HyperParameterTuningJobConfig") or {}
    return (config.get("HyperParameterTuningJobObjective") or {}).get("MetricName", "objective")
