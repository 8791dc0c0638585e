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

from smdist.backends import registry
from smdist.checks.tuning_section import require_tuning
from smdist.cli import options as opt
from smdist.cli import terminal
from smdist.cli.assignments import LOCAL_ROOT
from smdist.cli.job_files import load_plan
from smdist.errors import OPTION, Problem, SpecError

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
TuneBackendOption = Annotated[
    str | None,
    typer.Option(help="where to search: sagemaker (default), or local (as --local)"),
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
    backend: TuneBackendOption = None,
    bucket: opt.BucketOption = None,
    role: opt.RoleOption = None,
    region: opt.RegionOption = None,
    poll: opt.LookupPollOption = None,
    parallel: ParallelOption = None,
    hosts: TuneHostsOption = None,
    fresh: TuneFreshFlag = False,
    root: opt.RunRootOption = LOCAL_ROOT,
) -> None:
    """Search the job's tuning: hyperparameters (SageMaker tuning job, or --local here)."""
    chosen = _chosen(local, backend)
    here = chosen.command == "run"  # the search is supervised by this process
    flags = {"--bucket": bucket, "--role": role, "--region": region, "--poll": poll,
             "--parallel": parallel, "--hosts": hosts, "--fresh": fresh or None}  # fmt: skip
    if here and dry_run:
        flags["--dry-run"] = True
    options = _tune_options(chosen, flags, root if here else None)
    plan = load_plan(job_file)
    require_tuning(plan.spec)  # exit 2 naming the field, before any cloud call
    console = terminal.stderr()
    for warning in plan.warnings:
        terminal.warn(console, warning)
    if here:
        # lazy: the search's table and results, for a search here only
        from smdist.cli import tuning_local

        raise typer.Exit(tuning_local.run(plan, chosen, options, console=console))
    for line in chosen.tune_notes(plan):  # what it may cost, before anything is sent
        terminal.plain(console, line)
    if dry_run:
        shown, notes = chosen.show(plan, chosen.tune_dry_run(plan, options))
        typer.echo(shown)
        for line in notes:
            terminal.plain(console, line)
        return
    for line in chosen.announce(plan):  # before the upload, so a mistake can be stopped
        terminal.plain(console, line)
    job = chosen.tune(plan, options, None, wait=False)
    typer.echo(job.name)
    for line in chosen.launched(job):
        terminal.plain(console, line)
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


def _chosen(local: bool, backend: str | None) -> Any:
    """``--local``: the default backend's search here; else ``--backend`` (default: the
    default submit backend's)."""
    if local and backend is not None:
        raise SpecError(
            [Problem("--local", "and --backend both say where", None, "one of the two")], OPTION
        )
    name = registry.DEFAULT_BACKEND if local else backend or registry.DEFAULT_SUBMIT_BACKEND
    chosen = registry.get(name, "--backend")
    if not chosen.tunes:
        valid = ", ".join(registry.names(tunes=True))
        problem = Problem("--backend", "runs no hyperparameter search", name, valid)
        raise SpecError([problem], OPTION)
    return chosen


def _tune_options(chosen: Any, flags: dict[str, Any], root: Path | None) -> Any:
    """The chosen backend's search options; every flag set that it does not take: exit 2,
    nothing dropped."""
    fields = chosen.tune_options_model().model_fields
    given = {name: value for name, value in flags.items() if value is not None}
    wrong = [name for name in given if _field(name) not in fields]
    if wrong:
        if chosen.command == "run":
            why, valid = "is for a SageMaker tuning job; --local searches here", "leave out --local"
        else:
            why, valid = "is for a search here (--local)", "add --local, or leave the option out"
        raise SpecError([Problem(name, why, None, valid) for name in wrong], OPTION)
    values = {_field(name): value for name, value in given.items()}
    if root is not None:
        values["root"] = root
    return chosen.tune_options(values)


def _field(flag: str) -> str:
    return {"--poll": "poll_seconds"}.get(flag, flag[2:].replace("-", "_"))


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
