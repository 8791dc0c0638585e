"""A job read as a whole: a job file, a dict or typed objects, checked before anything runs.

``JobSpec.from_dict`` reports what pydantic finds; reading here also reports the errors of the
rest of the job (``partial``), so a user sees every problem at once, and checks the paths the
file names against this machine's disk (``disk``), so a job that could only fail after its
upload is refused first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from smdist.checks.disk import check_code_paths, check_paths
from smdist.checks.partial import not_reported, problems_of_the_rest, rest_of
from smdist.checks.validation import check_spec
from smdist.errors import Problem, SpecError
from smdist.spec.job import JobSpec
from smdist.spec.sections import Code
from smdist.yaml_text import MAX_DOCUMENT_BYTES, StrictYamlError, parse_untrusted


def from_dict(data: Any, source: str = "") -> JobSpec:
    """``JobSpec.from_dict``, with the whole-job errors of what did validate."""
    try:
        return JobSpec.from_dict(data, source=source)
    except SpecError as exc:
        problems = list(exc.problems)
        if isinstance(data, Mapping):
            problems += problems_of_the_rest(data, problems)
        raise SpecError(problems) from None


def load(path: str | Path, file_inputs_here: bool = True) -> JobSpec:
    """Load a job spec from a YAML (or JSON) file; errors name the file and the field.

    The file is read strictly (``smdist.yaml_text.parse_untrusted``) and the paths it names are
    checked against this machine's disk (``smdist.checks.disk``), so a job that could only fail
    after its upload is refused here.
    """
    path = Path(path)
    source = str(path)
    try:
        with path.open("rb") as handle:  # bytes: a bad byte is reported, never a traceback
            raw = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SpecError([Problem(source, f"cannot read the job file: {reason}")]) from None
    try:
        data = parse_untrusted(raw)
    except StrictYamlError as exc:  # a field path, or none when the whole file is at fault
        raise SpecError([Problem(exc.path or source, exc.message, None, exc.valid)]) from None
    except yaml.YAMLError as exc:
        text = str(exc).replace('"<unicode string>"', f'"{source}"')
        raise SpecError([Problem(source, f"not valid YAML: {text}")]) from None
    try:
        spec = JobSpec.from_dict(data, source=source)
    except SpecError as exc:
        raise SpecError(_every_problem(data, path, exc.problems)) from None
    spec = spec.model_copy(update={"code": _from_job_file(spec.code, path)})
    problems = check_paths(spec, file_inputs_here=file_inputs_here)
    if problems:
        # A wrong path must not hide the whole-job errors until it is fixed: both at once.
        problems += not_reported(check_spec(spec), problems)
        raise SpecError(problems)
    return spec


def _from_job_file(code: Code, path: Path) -> Code:
    """``code`` with a relative source_dir made relative to the job file, wherever smdist is
    run from."""
    source_dir = code.source_dir
    if source_dir is None:
        return code
    try:
        given = Path(source_dir).expanduser()
        resolved = str(given if given.is_absolute() else (path.parent / given).resolve())
    except (OSError, RuntimeError, ValueError):  # a NUL, ~unknown-user: reported by the check
        return code
    return code.model_copy(update={"source_dir": resolved})


def _every_problem(data: Any, path: Path, failed: list[Problem]) -> list[Problem]:
    """``failed`` (what the fields' own checks found), with the whole-job errors and the path
    errors of what did validate: a missing entry point is reported with a typo elsewhere."""
    problems = list(failed)
    if not isinstance(data, Mapping):
        return problems
    problems += problems_of_the_rest(data, failed)
    rest = rest_of(data, failed)
    if rest is not None:
        found = check_paths(rest.model_copy(update={"code": _from_job_file(rest.code, path)}))
    else:  # no whole job to build (e.g. an unknown strategy): the code section on its own
        try:
            code = Code.model_validate(data.get("code") or {})
        except (ValidationError, ValueError, TypeError):
            return problems
        found = check_code_paths(_from_job_file(code, path), code.entry_point)
    return problems + not_reported(found, problems)


def as_job_spec(value: Any) -> JobSpec:
    """A JobSpec from a JobSpec, a mapping of its fields (typed objects or dicts), or a path."""
    if isinstance(value, JobSpec):
        return value
    if isinstance(value, Mapping):
        return from_dict(value)
    if isinstance(value, (str, Path)):
        return load(value)
    raise SpecError(
        [
            Problem(
                "spec",
                f"cannot make a job spec from a {type(value).__name__}",
                None,
                "a JobSpec, a dict of its fields, or the path to a job file",
            )
        ]
    )
