"""``smdist run`` and ``smdist submit``: a job started on the backend ``--backend`` names, with
that backend's flags (made from its options model, ``backend_flags``).

``run`` supervises the job in this process to its end; ``submit`` sends it and returns (or
follows it with ``--wait``). Both plan once; the backend binds, shows (``--dry-run``) and sends.
"""

from __future__ import annotations

from typing import Any

import typer

from smdist.backends import registry
from smdist.backends.base import JobStatus
from smdist.cli import assignments as cli_assignments
from smdist.cli import backend_choice, backend_flags, terminal
from smdist.cli import options as opt
from smdist.cli.job_files import load_plan
from smdist.cli.run_status import LiveStatus, QuietFlag

RUN_FLAGS = backend_flags.flags(map(registry.get, registry.names(command="run")))
SUBMIT_FLAGS = backend_flags.flags(map(registry.get, registry.names(command="submit")))


def run(
    job_file: opt.JobFile,
    local: opt.LocalFlag = True,  # accepted and ignored: run is always on this machine
    backend: opt.RunBackendOption = registry.DEFAULT_BACKEND,
    assignments: opt.AssignmentsOption = None,
    quiet: QuietFlag = False,
    *,
    backend_values: dict[str, Any],
) -> None:
    """Run the job on this machine as SageMaker would run it: emulated hosts, no Docker.

    Exit 0 when it completes, 1 when it fails or is stopped (Ctrl-C, SIGTERM, max_run),
    2 when the job file or an option is invalid.
    """
    import signal

    # lazy: the planner, for run only (--help stays quick)
    from smdist.planning.plan import plan as make_plan

    # A SpecError or PrepareError here is reported by main(): exit 2, nothing started.
    chosen = backend_choice.chosen(backend, "run")
    options = backend_flags.options_for(chosen, backend_values, RUN_FLAGS)
    plan = make_plan(cli_assignments.local_spec(job_file, assignments or []))
    live = LiveStatus(quiet)  # a status line below the log, on a terminal only
    if "console" in chosen.Options.model_fields:
        options = options.model_copy(update={"console": live.console})
    job = chosen.launch(plan, options)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: job.stop(by="SIGTERM"))
    try:
        with live.showing():
            status = job.wait(logs=True)
    except KeyboardInterrupt:
        status = job.status if job.status.finished else JobStatus.STOPPED
    finally:
        signal.signal(signal.SIGTERM, previous)
    terminal.report_end(job, status)
    raise typer.Exit(status.exit_code)


def submit(
    job_file: opt.JobFile,
    wait: opt.SubmitWaitFlag = False,
    dry_run: opt.DryRunFlag = False,
    backend: opt.SubmitBackendOption = registry.DEFAULT_SUBMIT_BACKEND,
    logs: opt.LogsFlag = True,
    *,
    backend_values: dict[str, Any],
) -> None:
    """Submit a job (prints its name); --wait exits 0 completed, 1 failed/stopped."""
    chosen = backend_choice.chosen(backend, "submit")
    options = backend_flags.options_for(chosen, backend_values, SUBMIT_FLAGS)
    plan = load_plan(job_file, file_inputs_here=chosen.file_inputs_here)
    console = terminal.stderr()
    for warning in plan.warnings:
        terminal.warn(console, warning)
    for line in chosen.notes(plan):  # what it costs, before anything is sent
        terminal.plain(console, line)
    if dry_run:
        shown, notes = chosen.show(plan, chosen.dry_run(plan, options))
        typer.echo(shown)  # stdout: the value itself; its notes and what ships on stderr
        for line in notes:
            terminal.plain(console, line)
        return
    for line in chosen.announce(plan):  # before the upload, so a mistake can be stopped
        terminal.plain(console, line)
    job = chosen.launch(plan, options)
    typer.echo(job.name)
    for line in chosen.launched(job):
        terminal.plain(console, line)
    if not wait:
        return
    status = job.wait(logs=logs)
    terminal.report_end(job, status)
    raise typer.Exit(status.exit_code)
