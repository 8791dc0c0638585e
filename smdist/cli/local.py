"""The command line's local-job side: ``smdist run``'s options, and ``status``, ``logs`` and
``stop`` for jobs the local backend ran on this machine.

A local job lives in its directory, ``<root>/jobs/<name>/`` (root: ``.smdist`` by default):
``job.json`` says its status (written when it starts and when it ends, with the process that
supervises it), ``logs/job.log`` holds every line prefixed by its host. ``status``/``logs``/
``stop NAME`` look there first (NAME may also be the job directory's path); with
``--backend auto`` a name found nowhere here is a SageMaker job.

A stop is asked of the supervising process (the one that ran ``smdist run`` or ``smdist.fit``)
by a file in the job directory, so the job stops as any local job stops (SIGTERM to the
training processes, SIGKILL after the job's grace period) and ends with status Stopped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from smdist.backends.job_records import (
    RECORD,
    LocalJobRecord,
    read_job,
    request_stop,
    wait_for_end,
)
from smdist.backends.job_records import follow as follow_log
from smdist.errors import NO_SUCH_JOB, OPTION, Problem, SpecError, suggest

LOCAL_ROOT = Path(".smdist")
BACKENDS = ("auto", "local", "sagemaker")
BackendOption = Annotated[
    str,
    typer.Option(
        help="auto: the local job or study of that name under --root (or the job at that "
        "path) if there is one, else the SageMaker job; local; sagemaker"
    ),
]
RootOption = Annotated[Path, typer.Option(help="where local jobs are kept (smdist run --root)")]


# ---- smdist run: --set name=value ----------------------------------------------------------
def _assignment(text: str) -> tuple[str, object]:
    """``name=value`` with the value read as YAML (``1`` -> 1, ``true`` -> True, ``[1, 2]``)."""
    import yaml

    # lazy: PyYAML, for --set only (smdist --help imports this module)
    from smdist.yaml_text import StrictYamlError, parse_untrusted

    name, equals, raw = text.partition("=")
    if not equals or not name.strip():
        raise SpecError(
            [Problem("--set", "is not name=value", text, "e.g. --set epochs=1 -H max_steps=20")]
        )
    try:
        value = parse_untrusted(raw) if raw.strip() else ""
    except StrictYamlError as exc:  # an alias bomb or duplicate key: refused, not kept as text
        inner = exc.path if not exc.path or exc.path.startswith("[") else f".{exc.path}"
        where = f"hyperparameters.{name.strip()}{inner}"
        raise SpecError([Problem(where, exc.message, None, exc.valid)]) from None
    except yaml.YAMLError:
        value = raw
    return name.strip(), value


def check_run_backend(backend: str) -> None:
    """``run`` runs on this machine only; a SageMaker backend is ``submit``'s (option error)."""
    if backend == "local":
        return
    where = {"sagemaker": "on SageMaker", "sagemaker-local": "in SageMaker local mode (Docker)"}
    said = f"to run it {where[backend]}" if backend in where else "for SageMaker's backends"
    raise SpecError(
        [
            Problem(
                "--backend",
                f"run is always local (emulated hosts, no Docker); {said}, use "
                f"`smdist submit FILE --backend {backend if backend in where else 'sagemaker'}`",
                backend,
                "local",
            )
        ],
        OPTION,
    )


def local_spec(path: Path, assignments: list[str]):
    """The job file with ``--set`` overrides of its hyperparameters."""
    # lazy: the job models, for the commands that read a job file
    from smdist.checks.reading import from_dict, load

    spec = load(path)
    if not assignments:
        return spec
    data = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    overrides = dict(map(_assignment, assignments))
    for note in new_name_notes(spec, overrides):
        print(f"note: {note}", file=sys.stderr)
    data["hyperparameters"] = {**spec.hyperparameters, **overrides}
    return from_dict(data, source=str(path))


def new_name_notes(spec, overrides: dict[str, object]) -> list[str]:
    """A note for each ``--set`` name neither the job file nor the ready script knows: it is
    added as a new hyperparameter, which is rarely what a typo (``epoch`` for ``epochs``) meant."""
    from dataclasses import fields

    # lazy: the ready script's options (argparse), for --set only
    from smdist.runtime.args import TrainingArgs

    known = set(spec.hyperparameters)
    if spec.code.entry_point is None:  # smdist's ready script: its own options count too
        known |= {f.name for f in fields(TrainingArgs) if f.name not in _NOT_OPTIONS}
    notes = []
    for name in overrides:
        if name in known:
            continue
        close = suggest(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        notes.append(
            f"--set {name}: the job file has no hyperparameter {name!r}, so it is added as a new "
            f"one{hint}"
        )
    return notes


_NOT_OPTIONS = frozenset(
    {"smdist_backend", "smdist_communication", "smdist_collective_timeout", "unknown", "given"}
)


# ---- status, logs, stop of a local job -------------------------------------------------------
def check_backend(backend: str) -> None:
    """An option error unless ``backend`` is one of status, logs and stop's."""
    if backend not in BACKENDS:
        raise SpecError(
            [Problem("--backend", "unknown backend", backend, ", ".join(BACKENDS))], OPTION
        )


def find_job(name: str, backend: str, root: Path) -> Path | None:
    """The local job directory ``name`` stands for; None: a SageMaker job (``--backend``)."""
    check_backend(backend)
    if backend == "sagemaker":
        return None
    places = [root / "jobs" / name]
    if "/" in name or name.startswith("."):
        places.insert(0, Path(name))
    for place in places:
        if (place / RECORD).is_file():
            return place
    for place in places:
        if place.is_dir() and (place / "logs").is_dir():  # a local job's folder, never AWS's
            raise SpecError(
                [
                    Problem(
                        "job_name",
                        f"is a local job folder without its record {place / RECORD}: the job "
                        "is still being prepared, never started, or its record could not be "
                        f"written (a full disk); its log, if any, is {place / 'logs' / 'job.log'}",
                        name,
                    )
                ],
                NO_SUCH_JOB,
            )
    if backend == "local" or len(places) > 1:
        looked = " and ".join(str(place / RECORD) for place in places)
        raise SpecError(
            [
                Problem(
                    "job_name",
                    f"is no local job: there is no {looked}",
                    name,
                    f"the name of a job run under {root} (--root), or its directory",
                )
            ],
            NO_SUCH_JOB,
        )
    return None


def status_lines(job: LocalJobRecord) -> list[str]:
    record = job.record
    if record.get("backend") == "sagemaker-local":
        where = (
            f"sagemaker-local (SDK v{record.get('sdk')}): {record.get('instance_count')} "
            f"{record.get('instance_type')} container(s) in {job.job_dir}"
        )
    else:
        hosts = record.get("hosts") or []
        where = f"local: {len(hosts)} host(s) x {record.get('processes_per_host')} in {job.job_dir}"
    lines = [f"{job.name}\t{job.status}\t{where}"]
    if job.failure_reason:
        lines.append(f"reason: {job.failure_reason}")
    if job.status == "Completed" and job.record.get("model_artifacts"):
        lines.append(f"model: {job.record['model_artifacts']}")
    return lines


def status_document(job: LocalJobRecord) -> dict[str, Any]:
    return {**job.record, "status": job.status, "failure_reason": job.failure_reason}


def log_lines(job: LocalJobRecord, follow: bool) -> Iterator[str]:
    """``<host[ rRANK]> | <text>`` lines so far; ``follow``: until the job ends."""
    if not job.log.is_file():
        raise SpecError(
            [Problem(str(job.log), "does not exist: the job wrote no log")], NO_SUCH_JOB
        )
    yield from follow_log(job.log, lambda: read_job(job.job_dir).finished, follow)


# ---- the commands' local side (each returns the exit code) ----------------------------------
def show_status(job_dir: Path, as_json: bool) -> int:
    job = read_job(job_dir)
    if as_json:
        typer.echo(json.dumps(status_document(job), indent=2))
    else:
        typer.echo("\n".join(status_lines(job)))
    return job.exit_code


def show_logs(job_dir: Path, follow: bool) -> int:
    for line in log_lines(read_job(job_dir), follow):
        typer.echo(line)
    return read_job(job_dir).exit_code if follow else 0


def stop(job_dir: Path, console: Any, *, wait: bool, poll: float, report_end) -> None:
    job = read_job(job_dir)
    asked = request_stop(job)
    said = "stop requested" if asked else f"already {job.status}; nothing to stop"
    console.print(f"{job.name}: {said}", highlight=False, markup=False, soft_wrap=True)
    if wait and asked:
        ended = wait_for_end(job_dir, poll)
        report_end(ended, ended.status)
