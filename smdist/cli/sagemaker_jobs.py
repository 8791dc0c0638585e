"""The SageMaker side of ``submit``, ``status``, ``logs`` and ``stop``: checking submit's backend
options, the dry run, the launch and what it uploaded, and a SageMaker job's status."""

from __future__ import annotations

import json
from typing import Any

import typer

from smdist.cli.terminal import plain
from smdist.errors import SpecError
from smdist.exit_codes import EXIT_JOB_FAILED, EXIT_OK

SUBMIT_BACKENDS = ("sagemaker", "sagemaker-local")


def attach(name: str, region: str | None, poll: float):
    from smdist.backends.sagemaker import attach_job

    return attach_job(name, region=region, poll_seconds=poll)


def check_backend(backend: str) -> None:
    """SpecError unless ``backend`` is one ``submit`` knows."""
    if backend not in SUBMIT_BACKENDS:
        from smdist.errors import Problem

        raise SpecError(
            [Problem("--backend", "unknown backend", backend, ", ".join(SUBMIT_BACKENDS))]
        )


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
            from smdist.errors import OPTION, Problem

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
    from smdist.backends import sagemaker as cloud

    shown = cloud.dry_run(plan, bucket=bucket, role=role, region=region)
    typer.echo(json.dumps(shown.to_dict(), indent=2, default=str))
    for note in shown.warnings[len(plan.warnings) :]:  # the dry run's own, e.g. its region
        plain(console, f"note: {note}")
    from smdist.packaging.bundle import dry_run_lines

    # On stderr: stdout stays the request as JSON. Every path left out is named, with why.
    for line in dry_run_lines(plan):
        plain(console, line)


def launch(plan, backend: str, options: dict[str, object], console: Any):
    """Upload and start the job on ``backend``; prints its name, then what was uploaded."""
    import importlib

    from smdist.backends import BACKENDS
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
