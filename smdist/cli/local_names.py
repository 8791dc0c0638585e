"""What a name given to ``status``, ``logs`` or ``stop`` stands for on this machine, before
SageMaker is asked: a local job, a local study (``smdist tune --local``), a near miss of one of
them, or nothing here.

With ``--backend auto`` a name found nowhere here is a SageMaker job; but a mistyped local name
must not come back as an AWS error ("no AWS region is configured", "Unable to locate
credentials"): a close local name is suggested instead, and where AWS is not configured at all
the message says both where it looked here and why SageMaker was not asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from smdist.backends.job_records import RECORD
from smdist.backends.local_studies import (
    LocalStudy,
    is_study,
    list_studies,
    read_study,
    search_holder,
    stop_search,
    studies_dir,
)
from smdist.cli import local as cli_local
from smdist.cli.terminal import plain
from smdist.errors import NO_SUCH_JOB, OPTION, Problem, SpecError, suggest

Found = TypeVar("Found")
SET_REGION = "--region, AWS_REGION or `aws configure`"
SET_CREDENTIALS = "`aws configure`, AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"


def local_names(root: Path) -> list[str]:
    """The names of the local jobs and studies under ``root``."""
    names = [path.name for path in list_studies(root)]
    try:
        names += [p.name for p in (root / "jobs").iterdir() if (p / RECORD).is_file()]
    except OSError:
        pass
    return names


def _near(name: str, root: Path) -> str | None:
    close = suggest(name, [n for n in local_names(root) if n != name], n=1)
    return close[0] if close else None


def find(name: str, backend: str, root: Path) -> Path | LocalStudy | None:
    """The local job directory or study ``name`` stands for; None: look on SageMaker."""
    cli_local.check_backend(backend)
    if backend == "sagemaker":
        return None
    study = studies_dir(root) / name
    if "/" not in name and is_study(study) and not (root / "jobs" / name / RECORD).is_file():
        return read_study(study)
    try:
        return cli_local.find_job(name, backend, root)
    except SpecError as missing:
        close = _near(name, root)
        if missing.header != NO_SUCH_JOB or close is None:
            raise
        problems = [
            Problem(p.path, f"{p.message}; did you mean {close!r}?", p.value, p.valid)
            for p in missing.problems
        ]
        raise SpecError(problems, NO_SUCH_JOB) from None


def on_sagemaker(
    name: str, backend: str, root: Path, region: str | None, reach: Callable[[], Found]
) -> Found:
    """``reach()`` (SageMaker's job ``name``); with ``--backend auto``, unless the name is a
    near miss of a local one or AWS is not configured to look: then a SpecError (exit 2) that
    says what is here."""
    if backend == "sagemaker":  # asked for SageMaker: its own errors are the ones to show
        return reach()
    # lazy: the AWS configuration, for a name found nowhere here
    from smdist.backends.aws_region import configured_region
    from smdist.exit_codes import aws_errors

    close = _near(name, root)
    here = f"no local job or study {name!r} under {root}"

    def nowhere(why: str, needs: str = f"a region ({SET_REGION})") -> SpecError:
        said = f"{here}; did you mean {close!r}? ({why})" if close else f"{here}, and {why}"
        valid = f"a name `smdist jobs` lists, or a SageMaker job's with {needs}"
        return SpecError([Problem("job_name", said, None, valid)], NO_SUCH_JOB)

    if not (region or configured_region()):
        raise nowhere("no AWS region is configured to look on SageMaker")
    try:
        return reach()
    except SpecError as missing:
        if missing.header != NO_SUCH_JOB or close is None:
            raise
        raise nowhere("nor is there a SageMaker job of that name") from None
    except aws_errors() as error:
        if close is None and type(error).__name__ != "NoCredentialsError":
            raise
        needs = f"AWS credentials ({SET_CREDENTIALS})"
        raise nowhere(f"SageMaker could not be asked: {error}", needs) from None


# ---- a local study: status, logs, stop ------------------------------------------------------
def study_lines(study: LocalStudy) -> list[str]:
    where = f"local study: {study.completed} of {len(study.trials)} trial(s) completed"
    lines = [f"{study.name}\t{study.status}\t{where}, in {study.directory}"]
    if study.note:
        lines.append(f"note: {study.note}")
    best = study.best
    if best is None:
        if study.status != "InProgress":
            lines.append("best: none (no trial completed with a value of the objective)")
        return lines
    lines.append(
        f"best: trial {best.get('trial')} ({best.get('name')})\t"
        f"{study.objective_metric} = {best.get('objective')}"
    )
    ignored = {"trial", "name", "objective", "status", "model", "reason"}
    values = {key: value for key, value in best.items() if key not in ignored}
    lines.append(f"hyperparameters: {json.dumps(values, sort_keys=True, default=str)}")
    if best.get("model"):
        lines.append(f"model: {best['model']}")
    return lines


def show_study_status(study: LocalStudy, as_json: bool) -> int:
    if as_json:
        document = {**study.document, "status": study.status, "note": study.note}
        document |= {"directory": str(study.directory), "search_pid": study.holder}
        typer.echo(json.dumps(document, indent=2, default=str))
    else:
        typer.echo("\n".join(study_lines(study)))
    return study.exit_code


def trial_dir(study: LocalStudy, root: Path, wanted: str | None, console: Any) -> Path:
    """The job directory of the trial whose logs to show: ``--job`` (its name or number), else
    the best trial, else the latest one."""
    trials = sorted(study.trials, key=lambda t: t.get("trial", -1))
    if wanted is not None:
        chosen = next((t for t in trials if wanted in (t.get("name"), str(t.get("trial")))), None)
        if chosen is None:
            names = ", ".join(str(t.get("name")) for t in trials) or "none yet"
            problem = Problem("--job", f"is no trial of study {study.name}", wanted, names)
            raise SpecError([problem], OPTION)
    else:
        chosen = study.best or (trials[-1] if trials else None)
        if chosen is None:
            problem = Problem("job_name", "is a local study with no trial yet", study.name)
            raise SpecError([problem], NO_SUCH_JOB)
    plain(console, f"{study.name}: logs of trial {chosen.get('trial')} ({chosen.get('name')})")
    found = cli_local.find_job(str(chosen.get("name")), "local", root)
    assert found is not None  # find_job raises for --backend local
    return found


def stop_study(study: LocalStudy, console: Any, *, wait: bool, poll: float) -> None:
    """Stop the study's running search; with ``wait``, until it has ended (its status said)."""
    if not stop_search(study):
        plain(console, f"{study.name}: already {study.status}; nothing to stop")
        return
    plain(console, f"{study.name}: stop requested (SIGTERM to its search, pid {study.holder})")
    if wait:
        while search_holder(study.directory) is not None:
            time.sleep(min(poll, 1.0))
        ended = read_study(study.directory)
        plain(console, f"{ended.name}: {ended.status}; `smdist tune FILE --local` resumes it")
