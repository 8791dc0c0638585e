"""Checks of each range a search tunes (``tuning.parameters.<name>``), one range at a time.

A range is a hyperparameter the tuning job sets in every trial, so it must be a name the
container can take (not one SageMaker reserves, not one the job already fixes) and a range the
API accepts: finite, ordered bounds that suit the scaling, or categorical values that fit the
API's length limit, hold no credential and are distinct. How the ranges together fit the
search (its strategy, its counts) is ``smdist.checks.tuning``'s to decide.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from smdist.catalog import api, wire
from smdist.checks.hyperparameters import RESERVED_NAMES, RESERVED_PREFIXES
from smdist.checks.values import looks_like_secret
from smdist.errors import Problem
from smdist.spec.api_shapes import HYPERPARAMETER_NAME
from smdist.spec.job import JobSpec

if TYPE_CHECKING:  # the models are built only for a job with a tuning: section
    from smdist.spec.tuning import CategoricalRange, ContinuousRange, IntegerRange


def parameter_problems(spec: JobSpec, name: str, parameter: Any) -> list[Problem]:
    """Every problem of the range tuned as ``name``: its name, then its bounds or values."""
    path = f"tuning.parameters.{name}"
    problems = []
    if not HYPERPARAMETER_NAME.match(name):
        problems.append(
            Problem(path, "is not a usable hyperparameter name", name, "letters, digits, _ . -")
        )
    if name.startswith(RESERVED_PREFIXES) or name in RESERVED_NAMES:
        problems.append(Problem(path, "is reserved: SageMaker sets it", name))
    if name in spec.hyperparameters:
        problems.append(
            Problem(
                path,
                "is also set under hyperparameters: a tuned value would replace it in every trial",
                name,
                f"remove hyperparameters.{name}, or do not tune it",
            )
        )
    if parameter.type in ("continuous", "integer"):
        problems += _bound_problems(path, parameter)
    elif parameter.type == "categorical":
        problems += _categorical_problems(path, parameter)
    return problems


def _bound_problems(path: str, parameter: ContinuousRange | IntegerRange) -> list[Problem]:
    low, high = parameter.min, parameter.max
    if not (math.isfinite(low) and math.isfinite(high)):
        return [Problem(f"{path}.min", "and max must be finite numbers", [low, high])]
    if low >= high:
        return [Problem(f"{path}.max", f"must be greater than min ({low})", high)]
    if parameter.scaling == "Logarithmic" and low <= 0:
        return [
            Problem(
                f"{path}.min",
                "must be greater than 0 with Logarithmic scaling",
                low,
                "a positive minimum, or scaling: Linear",
            )
        ]
    if parameter.scaling == "ReverseLogarithmic" and not (0 <= low and high < 1):
        return [
            Problem(
                path,
                "ReverseLogarithmic scaling needs 0 <= min < max < 1",
                [low, high],
                "bounds within [0, 1), or scaling: Linear",
            )
        ]
    return []


def _categorical_problems(path: str, parameter: CategoricalRange) -> list[Problem]:
    """Each value travels as a hyperparameter (JSON-encoded, as the fixed ones): the same
    limits and the same credential check, then no value twice."""
    problems = []
    limit = api.field("tuning_range_value").limit
    for index, value in enumerate(parameter.values):
        encoded = wire.encode(value)
        if len(encoded) > limit:
            problems.append(
                Problem(
                    f"{path}.values[{index}]",
                    f"is {len(encoded)} characters once JSON-encoded; the tuning API takes at "
                    f"most {limit}",
                )
            )
        if looks_like_secret(encoded):
            problems.append(
                Problem(
                    f"{path}.values[{index}]",
                    "looks like a credential; tuned values are visible in the SageMaker "
                    "console and logs",
                    valid="read credentials in the script (e.g. from Secrets Manager)",
                )
            )
    text = [str(value) for value in parameter.values]
    duplicates = sorted({value for value in text if text.count(value) > 1})
    if duplicates:
        problems.append(Problem(f"{path}.values", "lists a value twice", duplicates))
    return problems
