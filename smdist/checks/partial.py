"""All of a job file's problems in one report: parse what can be parsed, then check the rest.

A field that fails its own check stops pydantic from building the JobSpec, so the rules that
need the whole job (``smdist.checks.validation.check_spec``: spot and warm pools, strategy against
cluster and framework, the API's limits) would wait until the first problems are fixed. Here the
values that failed (an unknown key, a bad value) are set aside, the rest is built and checked,
and its errors join the report. Problems about a value that was set aside are dropped: its
default stood in for it. A required value that failed (the strategy's kind, the instance type)
leaves nothing whole to check.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from smdist.checks.validation import check_spec
from smdist.errors import Problem
from smdist.spec.job import JobSpec

_NEEDED = ("strategy", "cluster")  # every whole-job rule reads both
_STEP = re.compile(r"[^.\[\]]+|\[\d+\]")


def _steps(path: str) -> list[str | int]:
    return [int(step[1:-1]) if step[0] == "[" else step for step in _STEP.findall(path)]


def _set_aside(data: Any, steps: list[str | int]) -> bool:
    """Remove the value at ``steps`` from ``data`` (nested dicts and lists); False if absent."""
    for step in steps[:-1]:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return False
    if isinstance(data, dict) and steps[-1] in data:
        del data[steps[-1]]
        return True
    return False


def _under(path: str, aside: set[str]) -> bool:
    return any(path == gone or path.startswith((gone + ".", gone + "[")) for gone in aside)


def rest_of(data: Mapping[str, Any], failed: list[Problem]) -> JobSpec | None:
    """``data`` built as a job once every value named in ``failed`` is set aside (each then
    takes its default); None when a required part cannot be set aside or the rest is not whole."""
    rest = copy.deepcopy(dict(data))
    for problem in failed:
        if not problem.path or not _set_aside(rest, _steps(problem.path)):
            return None
    rest.setdefault("name", "job")  # the name only labels the job; a bad one was reported
    if not all(key in rest for key in _NEEDED):
        return None
    try:
        return JobSpec.model_validate(rest)
    except (ValidationError, ValueError, TypeError, KeyError):
        return None  # the rest is not whole enough to judge; what was reported stands


def not_reported(found: list[Problem], failed: list[Problem]) -> list[Problem]:
    """The errors in ``found`` that neither repeat ``failed`` nor concern a value it set aside."""
    aside = {problem.path for problem in failed}
    reported = {str(problem) for problem in failed}
    return [
        problem
        for problem in found
        if problem.severity == "error"
        and not _under(problem.path, aside)
        and str(problem) not in reported
    ]


def problems_of_the_rest(data: Mapping[str, Any], failed: list[Problem]) -> list[Problem]:
    """The whole-job errors of ``data`` once every value named in ``failed`` is set aside."""
    spec = rest_of(data, failed)
    if spec is None:
        return []
    try:
        found = check_spec(spec)
    except (ValidationError, ValueError, TypeError, KeyError):
        return []  # the rest is not whole enough to judge; what was reported stands
    return not_reported(found, failed)


__all__ = ["not_reported", "problems_of_the_rest", "rest_of"]
