"""The SageMaker side of ``submit``, ``status``, ``logs`` and ``stop``: checking submit's backend
options, the dry run, the launch and what it uploaded, and a SageMaker job's status.

A name that is no training job but is a hyperparameter tuning job stands for the tuning job:
``status`` shows its status, trial counts and best trial, ``stop`` stops the search, and
``logs`` shows one trial's logs (the best one, or ``--job TRAINING_JOB``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from smdist.backends import BACKENDS
from smdist.cli.terminal import plain, stderr
from smdist.errors import NO_SUCH_JOB, OPTION, Problem, SpecError
from smdist.exit_codes import EXIT_JOB_FAILED, EXIT_OK

SUBMIT_BACKENDS = ("sagemaker", "sagemaker-local")


TrainingJobOption = Annotated[
    str | None,
    typer.Option(
        "--job", help="a tuning job's trial (training job) to show; default: the best one"
    ),
]


def attach(name: str, region: str | None, poll: float):
    """The training job ``name``, else the tuning job of that name; SpecError for neither."""
    # lazy: the SageMaker backend, for a SageMaker job only (--help stays quick)
    from smdist.backends.sagemaker import attach_job

    try:
        return attach_job(name, region=region, poll_seconds=poll)
    except SpecError as missing:
        if missing.header != NO_SUCH_JOB:
            raise
        # lazy: SageMaker's tuning jobs, when no training job has the name
        from smdist.backends.sagemaker import tuning

        found = tuning.find(name, region, poll_seconds=poll)
        if found is None:
            raise SpecError(
                [
                    Problem(
                        "job",
                        "no SageMaker training job or tuning job has this name in this region",
                        name,
                        "a name from `aws sagemaker list-training-jobs` or "
                        "`list-hyper-parameter-tuning-jobs`",
                    )
                ],
                NO_SUCH_JOB,
            ) from None
        return found


def log_source(name: str, region: str | None, poll: float, training_job: str | None):
    """The training job whose logs ``smdist logs NAME`` shows: NAME's, or for a tuning job
    ``--job``'s (default: the best trial's)."""
    job = attach(name, region, poll)
    if not _is_tuning(job):
        if training_job is not None:
            raise SpecError(
                [Problem("--job", "applies to tuning jobs; this is a training job", name)],
                OPTION,
            )
        return job
    trial = job.training_job(training_job)
    plain(stderr(), f"{job.name}: logs of training job {trial.name}")
    return trial


def _is_tuning(job) -> bool:
    # lazy: the SageMaker backend, as in attach
    from smdist.backends.sagemaker.tuning import TuningJob

    return isinstance(job, TuningJob)


def check_backend(backend: str) -> None:
    """An option error (not a job file's) unless ``backend`` is one ``submit`` knows; 'local'
    is named for what it is: the job on emulated hosts is ``smdist run``'s."""
    if backend in SUBMIT_BACKENDS:
        return
    if backend == "local":
        message, value = "local jobs run with `smdist run FILE`, not submit", None
    else:
        message, value = "is not one of submit's backends", backend
    raise SpecError([Problem("--backend", message, value, ", ".join(SUBMIT_BACKENDS))], OPTION)


def launch_options(
    backend: str,
    bucket: str | None,
    role: str | None,
    region: str | None,
    poll: float,
    shm_size: str | None,
) -> dict[str, object]:
    """The backend's launch options; SpecError for --shm-size on a backend it does not apply to."""
    options: dict[str, object] = {
        "bucket": bucket,
        "role": role,
        "region": region,
        "poll_seconds": poll,
    }
    if shm_size is not None:
        if backend != "sagemaker-local":
            raise SpecError(
                [Problem("--shm-size", "applies to --backend sagemaker-local only", shm_size)],
                OPTION,
            )
        options["shm_size"] = shm_size
    return options


def show_dry_run(
    plan, console: Any, bucket: str | None, role: str | None, region: str | None
) -> None:
    """The CreateTrainingJob request on stdout; its notes and what ships on stderr."""
    # lazy: the SageMaker backend, for a dry run only
    from smdist.backends import sagemaker as cloud

    shown = cloud.dry_run(plan, bucket=bucket, role=role, region=region)
    typer.echo(json.dumps(shown.to_dict(), indent=2, default=str))
    for note in shown.warnings[len(plan.warnings) :]:  # the dry run's own, e.g. its region
        plain(console, f"note: {note}")
    # lazy: packaging, for a dry run or a launch only
    from smdist.packaging.bundle import dry_run_lines

    # On stderr: stdout stays the request as JSON. Every path left out is named, with why.
    for line in dry_run_lines(plan):
        plain(console, line)


def launch(plan, backend: str, options: dict[str, object], console: Any):
    """Upload and start the job on ``backend``; prints its name, then what was uploaded."""
    import importlib

    # lazy: packaging, for a dry run or a launch only
    from smdist.packaging.bundle import upload_notice

    for line in upload_notice(plan):  # before the upload, so a mistake can be stopped
        plain(console, line)
    job = importlib.import_module(BACKENDS[backend]).launch(plan, **options)
    typer.echo(job.name)
    _report_uploads(job, console)
    return job


def _report_uploads(job, console: Any) -> None:
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
            plain(console, f"{what}: {done} ({uri})")


def local_mode_note(job, console: Any) -> None:
    """How to follow a sagemaker-local job, which runs on in its own process."""
    plain(
        console,
        f"{job.name}: running in SageMaker local mode on this machine; follow it with "
        f"`smdist logs -f {job.name}`, stop it with `smdist stop {job.name}`",
    )


def show_status(job, as_json: bool) -> int:
    """Print a SageMaker job's status (or its DescribeTrainingJob); its exit code."""
    if _is_tuning(job):
        return show_tuning_status(job, as_json)
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
    return EXIT_JOB_FAILED if state in ("Failed", "Stopped") else EXIT_OK


def show_tuning_status(job, as_json: bool) -> int:
    """A tuning job's status, trial counts and best trial (or its Describe as JSON); exit 1
    when it failed or was stopped, else 0."""
    # lazy: the SageMaker backend, for a tuning job only
    from smdist.backends.sagemaker.tuning import results

    description = job.describe()
    state = description["HyperParameterTuningJobStatus"]
    if as_json:
        typer.echo(json.dumps(description, indent=2, default=str))
    else:
        typer.echo(f"{job.name}\t{state}\ttuning job: {results.counts_line(description)}")
        if description.get("FailureReason"):
            typer.echo(f"reason: {description['FailureReason']}")
        best = description.get("BestTrainingJob")
        if best:
            metric = best.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
            typer.echo(
                f"best: {best['TrainingJobName']}\t{metric.get('MetricName', 'objective')} = "
                f"{metric.get('Value')}\t{best.get('TrainingJobStatus', '')}"
            )
            tuned = best.get("TunedHyperParameters") or {}
            values = {key: results.decode(value) for key, value in tuned.items()}
            typer.echo(f"hyperparameters: {json.dumps(values, sort_keys=True)}")
            model = job.training_job_model(best["TrainingJobName"])
            if model:
                typer.echo(f"model: {model}")
    ended = ("Failed", "Stopped", "Deleting", "DeleteFailed")
    return EXIT_JOB_FAILED if state in ended else EXIT_OK
