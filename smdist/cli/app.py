"""The ``smdist`` command: plan, validate, schema, instances, run, and SageMaker's verbs.

Exit codes are the contract CI relies on, one rule for every command (``smdist.exit_codes``):

- 0: success (the job completed, the spec is valid, the request was made);
- 1: a job ran and failed, or was stopped (Ctrl-C, SIGTERM, max_run);
- 2: something to fix before anything can run, in the job or on this machine: an invalid job
  file or option, an unreadable file, a missing tool (mpirun, Docker, horovod or torch in this
  environment), missing AWS credentials or role, a request AWS refused;
- 70: a bug in smdist itself, never the user's input.

Commands raise; ``main`` alone turns an error into its exit code and a message saying what to
fix, never a traceback unless ``smdist --debug ...`` (or ``SMDIST_DEBUG=1``) asks for it.
"""

from __future__ import annotations

import json
import os
import sys

import typer

from smdist.backends.base import JobStatus
from smdist.cli import help as cli_help
from smdist.cli import local as cli_local
from smdist.cli import local_names, sagemaker_jobs, terminal
from smdist.cli import options as opt
from smdist.cli import tuning as cli_tuning
from smdist.cli.init_file import init_command
from smdist.cli.job_files import load_plan
from smdist.cli.run_status import LiveStatus, QuietFlag
from smdist.cli.sagemaker_jobs import SUBMIT_BACKENDS as SUBMIT_BACKENDS
from smdist.exit_codes import EXIT_INVALID, EXIT_OK, debug_requested, report
from smdist.planning.cost_text import job_cost_line

app = cli_help.Typer(  # flags show as flags in --help, not as "<bool>"
    name="smdist",
    help="Typed, pre-checked distributed training on Amazon SageMaker.",
    no_args_is_help=True,
    add_completion=True,  # smdist --install-completion [SHELL] / --show-completion [SHELL]
    pretty_exceptions_enable=False,
)

_debug = [False]  # set by --debug before a command runs; read by main() when one raises


def _skip_pydantic_plugin_search() -> None:
    """Pydantic plugins observe an application's validation; the smdist command's own job
    models have none to serve, and finding them reads every installed package's metadata
    (some 10 ms a command, before a local job's hosts can start). A user who names plugins
    in PYDANTIC_DISABLE_PLUGINS keeps pydantic's own handling."""
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # a pydantic without plugins: nothing to skip
        return
    if getattr(_loader, "_plugins", ()) is None:  # not searched yet
        _loader._plugins = {}


@app.callback()
def _global_options(debug: opt.DebugFlag = False, version: opt.VersionFlag = False) -> None:
    _debug[0] = debug
    _skip_pydantic_plugin_search()  # here, not for --help / --version: they build no models


@app.command("plan")
def plan_command(
    job_file: opt.JobFile,
    as_json: opt.PlanJsonFlag = False,
    hosts: opt.HostsFlag = False,
    hosts_count: opt.HostsCountOption = 4,
) -> None:
    """Check a job and show exactly what SageMaker would run (--hosts: on each host)."""
    plan = load_plan(job_file, submittable=True)
    if hosts:
        # lazy: the host builder, and the installed SDK line's container, for --hosts only
        from smdist.backends.sagemaker.rendering import host_line
        from smdist.planning import host_view

        line = host_line(plan)
        if as_json:
            typer.echo(json.dumps(host_view.hosts_document(plan, hosts_count, line), indent=2))
        else:
            typer.echo("\n".join(host_view.hosts_text(plan, hosts_count, line)))
        return
    # lazy: the SageMaker backend's modules (pydantic models), never for --help
    from smdist.backends.sagemaker.rendering import sdk_rendering

    rendering = sdk_rendering(plan)  # what the installed SDK line sends
    if as_json:
        typer.echo(json.dumps({**plan.to_dict(), **rendering.to_dict()}, indent=2))
        return
    from rich.console import Console

    # lazy: the plan's table (html, json), for this command only
    from smdist.planning.display import plan_renderable

    Console().print(plan_renderable(plan, rendering))


@app.command()
def validate(job_file: opt.JobFile) -> None:
    """Exit 0 when the job is valid, 2 with the problems on stderr when it is not."""
    plan = load_plan(job_file, submittable=True)
    console = terminal.stderr()
    for warning in plan.warnings:
        terminal.warn(console, warning)
    typer.echo(f"{job_file}: valid ({plan.spec.strategy.kind}, world size {plan.world_size})")


@app.command()
def schema() -> None:
    """Print the JSON Schema of job files (for editors and CI linters)."""
    # lazy: the job's pydantic models, built only for this command
    from smdist.spec.job import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


@app.command()
def instances(family: opt.FamilyOption = None) -> None:
    """List the instance catalogue: GPUs, memory, EFA, price, libraries."""
    from rich.console import Console

    # lazy: the catalogue's data files, read for this command only
    from smdist.cli.instance_table import instance_table

    Console().print(instance_table(family))


# ---- run: the job on this machine (the local backend) ------------------------------------------
LOCAL_ROOT = cli_local.LOCAL_ROOT
_assignment = cli_local._assignment  # --set name=value (its tests import it from here)


@app.command()
def run(
    job_file: opt.JobFile,
    local: opt.LocalFlag = True,  # accepted and ignored: run is always local
    backend: opt.RunBackendOption = "local",
    hosts: opt.HostsOption = None,
    processes_per_host: opt.ProcessesPerHostOption = None,
    assignments: opt.AssignmentsOption = None,
    max_run: opt.MaxRunOption = None,
    stall_timeout: opt.StallTimeoutOption = 600.0,
    grace: opt.GraceOption = 30.0,
    cpu: opt.CpuFlag = False,
    root: opt.RunRootOption = LOCAL_ROOT,
    fresh: opt.FreshFlag = False,
    namespaces: opt.NamespacesFlag = None,
    quiet: QuietFlag = False,
) -> None:
    """Run the job on this machine as SageMaker would run it: emulated hosts, no Docker.

    Exit 0 when it completes, 1 when it fails or is stopped (Ctrl-C, SIGTERM, max_run),
    2 when the job file or an option is invalid.
    """
    import signal

    # lazy: the local backend and the planner, for run only (--help stays quick)
    from smdist.backends.local import launch
    from smdist.planning.plan import plan as make_plan

    # A SpecError or PrepareError here is reported by main(): exit 2, nothing started.
    cli_local.check_run_backend(backend)
    plan = make_plan(cli_local.local_spec(job_file, assignments or []))
    live = LiveStatus(quiet)  # a status line below the log, on a terminal only
    job = launch(
        plan,
        hosts=hosts,
        processes_per_host=processes_per_host,
        max_run=max_run,
        stall_timeout=stall_timeout or None,
        grace=grace,
        use_gpus=False if cpu else None,
        root=root,
        fresh=fresh,
        namespaces=namespaces,
        console=live.console,
    )
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


app.command("tune")(cli_tuning.tune_command)
app.command("init")(init_command)


# ---- SageMaker jobs: submit, status, logs, stop --------------------------------------------------
BackendOption, RootOption = cli_local.BackendOption, cli_local.RootOption


@app.command()
def submit(
    job_file: opt.JobFile,
    wait: opt.SubmitWaitFlag = False,
    dry_run: opt.DryRunFlag = False,
    backend: opt.SubmitBackendOption = "sagemaker",
    bucket: opt.BucketOption = None,
    role: opt.RoleOption = None,
    region: opt.RegionOption = None,
    logs: opt.LogsFlag = True,
    shm_size: opt.ShmSizeOption = None,
    poll: opt.PollOption = 10.0,
) -> None:
    """Submit a job to SageMaker (prints its name); --wait exits 0 completed, 1 failed/stopped."""
    sagemaker_jobs.check_backend(backend)
    plan = load_plan(job_file)
    console = terminal.stderr()
    for warning in plan.warnings:
        terminal.warn(console, warning)
    if backend == "sagemaker":  # local mode runs on this machine: no instance is paid for
        terminal.plain(console, job_cost_line(plan))
    options = sagemaker_jobs.launch_options(backend, bucket, role, region, poll, shm_size)
    if dry_run:
        sagemaker_jobs.show_dry_run(plan, console, bucket=bucket, role=role, region=region)
        return
    job = sagemaker_jobs.launch(plan, backend, options, console)
    if not wait:
        if backend == "sagemaker-local":  # it runs on in its own process, as a SageMaker job does
            sagemaker_jobs.local_mode_note(job, console)
        return
    status = job.wait(logs=logs)
    terminal.report_end(job, status)
    raise typer.Exit(status.exit_code)


@app.command()
def status(
    job_name: opt.JobName,
    region: opt.RegionOption = None,
    as_json: opt.DescribeJsonFlag = False,
    backend: BackendOption = "auto",
    root: RootOption = LOCAL_ROOT,
) -> None:
    """Show a job's status (local or SageMaker): exit 0 running or completed, 1 failed/stopped."""
    local = local_names.find(job_name, backend, root)
    if isinstance(local, local_names.LocalStudy):
        raise typer.Exit(local_names.show_study_status(local, as_json))
    if local is not None:
        raise typer.Exit(cli_local.show_status(local, as_json))
    job = local_names.on_sagemaker(
        job_name, backend, root, region, lambda: sagemaker_jobs.attach(job_name, region, 10.0)
    )
    raise typer.Exit(sagemaker_jobs.show_status(job, as_json))


@app.command()
def logs(
    job_name: opt.JobName,
    follow: opt.FollowFlag = False,
    region: opt.RegionOption = None,
    poll: opt.PollOption = 10.0,
    backend: BackendOption = "auto",
    root: RootOption = LOCAL_ROOT,
    training_job: sagemaker_jobs.TrainingJobOption = None,
) -> None:
    """Print a job's logs (local, or SageMaker's CloudWatch), each line prefixed with its host."""
    local = local_names.find(job_name, backend, root)
    if isinstance(local, local_names.LocalStudy):
        local = local_names.trial_dir(local, root, training_job, terminal.stderr())
    if local is not None:
        raise typer.Exit(cli_local.show_logs(local, follow))
    job = local_names.on_sagemaker(
        job_name,
        backend,
        root,
        region,
        lambda: sagemaker_jobs.log_source(job_name, region, poll, training_job),
    )
    for line in job.logs(follow=follow):
        typer.echo(line)
    if follow:
        raise typer.Exit(job.status.exit_code)


@app.command()
def stop(
    job_name: opt.JobName,
    wait: opt.StopWaitFlag = False,
    region: opt.RegionOption = None,
    poll: opt.PollOption = 10.0,
    backend: BackendOption = "auto",
    root: RootOption = LOCAL_ROOT,
) -> None:
    """Stop a job: SIGTERM, then SIGKILL after the grace period (SageMaker: 120 s)."""
    local = local_names.find(job_name, backend, root)
    if isinstance(local, local_names.LocalStudy):
        local_names.stop_study(local, terminal.stderr(), wait=wait, poll=poll)
        return
    if local is not None:
        cli_local.stop(
            local, terminal.stderr(), wait=wait, poll=poll, report_end=terminal.report_end
        )
        return
    job = local_names.on_sagemaker(
        job_name, backend, root, region, lambda: sagemaker_jobs.attach(job_name, region, poll)
    )
    job.stop()
    terminal.plain(terminal.stderr(), f"{job.name}: stop requested")
    if wait:
        terminal.report_end(job, job.wait())


@app.command()
def jobs(root: RootOption = LOCAL_ROOT, as_json: opt.JobsJsonFlag = False) -> None:
    """List the local jobs and studies under --root, newest first (exit 0)."""
    # lazy: the listing, for this command only
    from smdist.cli.job_list import list_jobs

    raise typer.Exit(list_jobs(root, as_json))


_COMPLETION_OPTIONS = ("--show-completion", "--install-completion")
# typer's mode where the completion options take the shell's name (bash, zsh, fish,
# powershell, pwsh) instead of detecting the shell smdist runs under
_NAMED_SHELL_MODE = "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"


def _names_a_shell(argv: list[str]) -> bool:
    """``smdist --show-completion zsh``: typer would detect the shell that runs smdist and
    drop the name, so bash would get bash's script; a named shell gets its own (an unknown
    name is refused with the valid ones, exit 2)."""
    for index, word in enumerate(argv):
        if word.startswith(tuple(f"{option}=" for option in _COMPLETION_OPTIONS)):
            return True
        if word in _COMPLETION_OPTIONS and index + 1 < len(argv):
            return not argv[index + 1].startswith("-")
    return False


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    _debug[0] = False
    words = sys.argv[1:] if argv is None else argv
    named_shell = _names_a_shell(words) and _NAMED_SHELL_MODE not in os.environ
    if named_shell:
        os.environ[_NAMED_SHELL_MODE] = "1"
    try:
        app(args=argv, prog_name="smdist", standalone_mode=True)
    except SystemExit as exc:  # click's usage errors (2) and every command's typer.Exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_INVALID)
    except Exception as error:  # noqa: BLE001 - the one place errors become exit codes
        return report(error, terminal.stderr(), debug=debug_requested(_debug[0]))
    finally:
        if named_shell:
            del os.environ[_NAMED_SHELL_MODE]
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
