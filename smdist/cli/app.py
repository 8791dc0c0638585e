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
import sys
from pathlib import Path
from typing import Annotated

import typer

from smdist.cli import help as cli_help
from smdist.cli import local as cli_local
from smdist.errors import SpecError
from smdist.exit_codes import EXIT_INVALID, EXIT_JOB_FAILED, EXIT_OK, debug_requested, report

app = cli_help.Typer(  # flags show as flags in --help, not as "<bool>"
    name="smdist",
    help="Typed, pre-checked distributed training on Amazon SageMaker.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JobFile = Annotated[Path, typer.Argument(help="job spec (YAML)", show_default=False)]
_debug = [False]  # set by --debug before a command runs; read by main() when one raises


@app.callback()
def _global_options(
    debug: Annotated[
        bool, typer.Option("--debug", help="show an error's traceback (also: SMDIST_DEBUG=1)")
    ] = False,
) -> None:
    _debug[0] = debug


def _stderr():
    from rich.console import Console

    return Console(stderr=True)


def _load_plan(path: Path, submittable: bool = False):
    """The job file's plan; with ``submittable``, also refused for what ``submit`` would refuse
    under the installed SDK line (so ``validate`` and ``plan`` know it before any cost)."""
    from smdist.checks.reading import load
    from smdist.planning.plan import plan

    made = plan(load(path))
    if submittable:
        from smdist.backends.sagemaker import submission_problems

        problems = submission_problems(made)
        if problems:
            raise SpecError(problems)
    return made


@app.command("plan")
def plan_command(
    job_file: JobFile,
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
    hosts: Annotated[
        bool, typer.Option("--hosts", help="show what each host runs in SageMaker's container")
    ] = False,
    hosts_count: Annotated[
        int, typer.Option(min=2, help="with --hosts: hosts shown, the first ones and the last")
    ] = 4,
) -> None:
    """Check a job and show exactly what SageMaker would run (--hosts: on each host)."""
    plan = _load_plan(job_file, submittable=True)
    if hosts:
        from smdist.planning import host_view

        if as_json:
            typer.echo(json.dumps(host_view.hosts_document(plan, hosts_count), indent=2))
        else:
            typer.echo("\n".join(host_view.hosts_text(plan, hosts_count)))
        return
    from smdist.backends.sagemaker.rendering import sdk_rendering

    rendering = sdk_rendering(plan)  # what the installed SDK line sends
    if as_json:
        typer.echo(json.dumps({**plan.to_dict(), **rendering.to_dict()}, indent=2))
        return
    from rich.console import Console

    from smdist.planning.display import plan_renderable

    Console().print(plan_renderable(plan, rendering))


@app.command()
def validate(job_file: JobFile) -> None:
    """Exit 0 when the job is valid, 2 with the problems on stderr when it is not."""
    plan = _load_plan(job_file, submittable=True)
    console = _stderr()
    for warning in plan.warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    typer.echo(f"{job_file}: valid ({plan.spec.strategy.kind}, world size {plan.world_size})")


@app.command()
def schema() -> None:
    """Print the JSON Schema of job files (for editors and CI linters)."""
    from smdist.spec.job import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


@app.command()
def instances(
    family: Annotated[str | None, typer.Option(help="only this family, e.g. p4d")] = None,
) -> None:
    """List the instance catalogue: GPUs, memory, EFA, price, libraries."""
    from rich.console import Console
    from rich.table import Table

    from smdist import catalog

    table = Table(
        "instance type",
        "GPUs",
        "GPU",
        "vCPUs",
        "EFA",
        "$/hour",
        "libraries",
        title=f"catalogue of {catalog.catalog_date()} ({catalog.price_region()})",
    )
    for name in catalog.known_instance_types():
        info = catalog.instance(name)
        if info is None or (family and info.family != family):
            continue
        table.add_row(
            name + (" (retired)" if info.retired else ""),
            str(info.gpus),
            info.gpu_model or "-",
            str(info.vcpus),
            "yes" if info.efa else "",
            f"{info.price_per_hour:.3f}" if info.price_per_hour else "-",
            ", ".join(sorted(info.libraries)),
        )
    Console().print(table)


# ---- run: the job on this machine (the local backend) ------------------------------------------
LOCAL_ROOT = cli_local.LOCAL_ROOT
_assignment = cli_local._assignment  # --set name=value (its tests import it from here)


@app.command()
def run(
    job_file: JobFile,
    # Accepted and ignored: run is always local. Hidden, but kept so that scripts and CI jobs
    # written when --help still listed it keep working (README: "Running locally").
    local: Annotated[bool, typer.Option("--local", hidden=True)] = True,
    hosts: Annotated[
        int | None, typer.Option("--hosts", min=1, help="emulated hosts (default: instance_count)")
    ] = None,
    processes_per_host: Annotated[
        int | None,
        typer.Option("--processes-per-host", min=1, help="default: the strategy's, capped here"),
    ] = None,
    assignments: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            "-H",
            metavar="name=value",
            help="override a hyperparameter (repeatable)",
        ),
    ] = None,
    max_run: Annotated[
        float | None, typer.Option("--max-run", min=1, help="seconds (default: the spec's)")
    ] = None,
    stall_timeout: Annotated[
        float,
        typer.Option(help="fail when no process prints for this many seconds (0: never)"),
    ] = 600.0,
    grace: Annotated[float, typer.Option(min=0.1, help="seconds from SIGTERM to SIGKILL")] = 30.0,
    cpu: Annotated[bool, typer.Option("--cpu", help="run on CPU even where GPUs exist")] = False,
    root: Annotated[
        Path, typer.Option(help="where jobs, logs and checkpoints are kept")
    ] = LOCAL_ROOT,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="start without the checkpoints earlier runs kept (they are moved aside, not "
            "deleted, once this job has written its own)",
        ),
    ] = False,
) -> None:
    """Run the job on this machine as SageMaker would run it: emulated hosts, no Docker.

    Exit 0 when it completes, 1 when it fails or is stopped (Ctrl-C, SIGTERM, max_run),
    2 when the job file or an option is invalid.
    """
    import signal

    from smdist.backends.base import JobStatus
    from smdist.backends.local import launch
    from smdist.planning.plan import plan as make_plan

    # A SpecError or PrepareError here is reported by main(): exit 2, nothing started.
    plan = make_plan(cli_local.local_spec(job_file, assignments or []))
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
    )
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: job.stop())
    try:
        status = job.wait(logs=True)
    except KeyboardInterrupt:
        status = job.status if job.status.finished else JobStatus.STOPPED
    finally:
        signal.signal(signal.SIGTERM, previous)
    _report_end(job, status)
    raise typer.Exit(status.exit_code)


# ---- SageMaker jobs: submit, status, logs, stop --------------------------------------------------
SUBMIT_BACKENDS = ("sagemaker", "sagemaker-local")
JobName = Annotated[str, typer.Argument(help="training job name", show_default=False)]
RegionOption = Annotated[str | None, typer.Option(help="AWS region (default: AWS config)")]
PollOption = Annotated[float, typer.Option(help="seconds between status polls", hidden=True)]
BackendOption, RootOption = cli_local.BackendOption, cli_local.RootOption


def _attach(name: str, region: str | None, poll: float):
    from smdist.backends.sagemaker import attach_job

    return attach_job(name, region=region, poll_seconds=poll)


def _report_end(job, status) -> None:
    """The last line of a job's output: its model, or why it failed (one line)."""
    console, status = _stderr(), getattr(status, "value", status)
    if status == "Completed":
        text = f"{job.name}: Completed; model: {job.model_artifacts}"
    else:
        text = f"{job.name}: {status}: {job.failure_reason or 'no reason given'}"
    console.print(text, highlight=False, markup=False, soft_wrap=True)


@app.command()
def submit(
    job_file: JobFile,
    wait: Annotated[
        bool, typer.Option("--wait", help="wait for the job; exit 1 if it fails")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="print the CreateTrainingJob request; call no AWS API")
    ] = False,
    backend: Annotated[str, typer.Option(help="sagemaker or sagemaker-local")] = "sagemaker",
    bucket: Annotated[str | None, typer.Option(help="S3 bucket for code (default: SDK's)")] = None,
    role: Annotated[
        str | None, typer.Option(help="IAM role ARN when the job file has none")
    ] = None,
    region: RegionOption = None,
    logs: Annotated[bool, typer.Option(help="stream the job's logs while waiting")] = True,
    shm_size: Annotated[
        str | None,
        typer.Option(help="sagemaker-local: /dev/shm size of each container, e.g. 2gb"),
    ] = None,
    poll: PollOption = 10.0,
) -> None:
    """Submit a job to SageMaker (prints its name); --wait exits 0 completed, 1 failed/stopped."""
    if backend not in SUBMIT_BACKENDS:
        from smdist.errors import Problem

        raise SpecError(
            [Problem("--backend", "unknown backend", backend, ", ".join(SUBMIT_BACKENDS))]
        )
    plan = _load_plan(job_file)
    console = _stderr()
    for warning in plan.warnings:
        console.print(
            f"warning: {warning}", style="yellow", highlight=False, markup=False, soft_wrap=True
        )
    options: dict[str, object] = {
        "bucket": bucket,
        "role": role,
        "region": region,
        "poll_seconds": poll,
    }
    if shm_size is not None:
        if backend != "sagemaker-local":
            from smdist.errors import OPTION, Problem

            raise SpecError(
                [Problem("--shm-size", "applies to --backend sagemaker-local only", shm_size)],
                OPTION,
            )
        options["shm_size"] = shm_size
    if dry_run:
        from smdist.backends import sagemaker as cloud

        shown = cloud.dry_run(plan, bucket=bucket, role=role, region=region)
        typer.echo(json.dumps(shown.to_dict(), indent=2, default=str))
        for note in shown.warnings[len(plan.warnings) :]:  # the dry run's own, e.g. its region
            console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
        from smdist.packaging.bundle import dry_run_lines

        # On stderr: stdout stays the request as JSON. Every path left out is named, with why.
        for line in dry_run_lines(plan):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    import importlib

    from smdist.backends import BACKENDS
    from smdist.packaging.bundle import upload_notice

    for line in upload_notice(plan):  # before the upload, so a mistake can be stopped
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    job = importlib.import_module(BACKENDS[backend]).launch(plan, **options)
    typer.echo(job.name)
    for what, uri, count in (
        ("code", getattr(job, "source_uri", None), getattr(job, "uploaded_bytes", None)),
        (
            "drivers",
            getattr(job, "drivers_uri", None),
            getattr(job, "drivers_uploaded_bytes", None),
        ),
    ):
        if uri is not None and count is not None:
            done = f"uploaded {count} bytes" if count else "unchanged, not uploaded again"
            console.print(f"{what}: {done} ({uri})", highlight=False, markup=False, soft_wrap=True)
    if not wait:
        if backend == "sagemaker-local":  # it runs on in its own process, as a SageMaker job does
            console.print(
                f"{job.name}: running in SageMaker local mode on this machine; follow it with "
                f"`smdist logs -f {job.name}`, stop it with `smdist stop {job.name}`",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        return
    status = job.wait(logs=logs)
    _report_end(job, status)
    raise typer.Exit(status.exit_code)


@app.command()
def status(
    job_name: JobName,
    region: RegionOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print DescribeTrainingJob")] = False,
    backend: BackendOption = "auto",
    root: RootOption = LOCAL_ROOT,
) -> None:
    """Show a job's status (local or SageMaker): exit 0 running or completed, 1 failed/stopped."""
    local = cli_local.find_job(job_name, backend, root)
    if local is not None:
        raise typer.Exit(cli_local.show_status(local, as_json))
    job = _attach(job_name, region, 10.0)
    description = job.describe()
    state = description["TrainingJobStatus"]
    if as_json:
        typer.echo(json.dumps(description, indent=2, default=str))
    else:
        typer.echo(f"{job.name}\t{state}\t{description.get('SecondaryStatus', '')}")
        if description.get("FailureReason"):
            typer.echo(f"reason: {description['FailureReason']}")
        artifacts = (description.get("ModelArtifacts") or {}).get("S3ModelArtifacts")
        if state == "Completed" and artifacts:
            typer.echo(f"model: {artifacts}")
    raise typer.Exit(EXIT_JOB_FAILED if state in ("Failed", "Stopped") else EXIT_OK)


@app.command()
def logs(
    job_name: JobName,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="until the job ends")] = False,
    region: RegionOption = None,
    poll: PollOption = 10.0,
    backend: BackendOption = "auto",
    root: RootOption = LOCAL_ROOT,
) -> None:
    """Print a job's logs (local, or SageMaker's CloudWatch), each line prefixed with its host."""
    local = cli_local.find_job(job_name, backend, root)
    if local is not None:
        raise typer.Exit(cli_local.show_logs(local, follow))
    job = _attach(job_name, region, poll)
    for line in job.logs(follow=follow):
        typer.echo(line)
    if follow:
        raise typer.Exit(job.status.exit_code)


@app.command()
def stop(
    job_name: JobName,
    wait: Annotated[bool, typer.Option("--wait", help="wait until it has stopped")] = False,
    region: RegionOption = None,
    poll: PollOption = 10.0,
    backend: BackendOption = "auto",
    root: RootOption = LOCAL_ROOT,
) -> None:
    """Stop a job: SIGTERM, then SIGKILL after the grace period (SageMaker: 120 s)."""
    local = cli_local.find_job(job_name, backend, root)
    if local is not None:
        cli_local.stop(local, _stderr(), wait=wait, poll=poll, report_end=_report_end)
        return
    job = _attach(job_name, region, poll)
    job.stop()
    _stderr().print(f"{job.name}: stop requested", highlight=False, markup=False, soft_wrap=True)
    if wait:
        _report_end(job, job.wait())


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    _debug[0] = False
    try:
        app(args=argv, prog_name="smdist", standalone_mode=True)
    except SystemExit as exc:  # click's usage errors (2) and every command's typer.Exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_INVALID)
    except Exception as error:  # noqa: BLE001 - the one place errors become exit codes
        return report(error, _stderr(), debug=debug_requested(_debug[0]))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
