"""Checks of a job's hyperparameters: names, reserved names, wire lengths, credentials, count."""

from __future__ import annotations

from typing import Any

from smdist.catalog import wire
from smdist.checks.values import looks_like_secret
from smdist.errors import Problem
from smdist.spec.api_shapes import HYPERPARAMETER_NAME, SECRET_NAME
from smdist.spec.job import JobSpec

RESERVED_PREFIXES = ("sagemaker_",)
RESERVED_NAMES = ("mp_parameters", "model_dir")
# Hyperparameters the SDK adds to every job (program, submit dir, log level, job name, region).
SDK_HYPERPARAMETER_COUNT = 5


def effective_framework(spec: JobSpec) -> str:
    return spec.code.framework or spec.strategy.framework


def added_hyperparameters(spec: JobSpec, toolkit: dict[str, Any]) -> dict[str, object]:
    """What the distribution adds to the user's hyperparameters (before the SDK's own five):
    ``toolkit``, the launch's toolkit hyperparameters."""
    values: dict[str, object] = dict(toolkit)
    if effective_framework(spec) == "tensorflow":
        values["model_dir"] = None  # the TF estimator adds it; its value is known at submit
    return values


def check_hyperparameters(spec: JobSpec, toolkit: dict[str, Any]) -> list[Problem]:
    """Every problem of the user's hyperparameters, of the toolkit's, then of their count."""
    problems = []
    for name, value in spec.hyperparameters.items():
        problems += _user_hyperparameter_problems(name, value)
    for name, value in toolkit.items():
        problems += _toolkit_hyperparameter_problems(name, value)
    problems += _count_problems(spec, toolkit)
    return problems


def _user_hyperparameter_problems(name: str, value: Any) -> list[Problem]:
    problems = []
    path = f"hyperparameters.{name}"
    if not HYPERPARAMETER_NAME.match(name):
        problems.append(
            Problem(
                path,
                "is not a usable hyperparameter name",
                name,
                "letters, digits, _ . - (starting with a letter or _)",
            )
        )
    if name.startswith(RESERVED_PREFIXES) or name in RESERVED_NAMES:
        problems.append(
            Problem(
                path,
                "is reserved: SageMaker sets it",
                name,
                "a name not starting with sagemaker_ (nor mp_parameters, model_dir)",
            )
        )
    encoded = wire.encode(value)
    if len(encoded) > wire.MAX_VALUE_LENGTH:
        problems.append(
            Problem(
                path,
                f"is {len(encoded)} characters once JSON-encoded; SageMaker accepts "
                f"at most {wire.MAX_VALUE_LENGTH}",
                None,
                "a shorter value, or put the data in an input channel",
            )
        )
    if SECRET_NAME.search(name) or looks_like_secret(encoded):
        problems.append(
            Problem(
                path,
                "looks like a credential; hyperparameters are visible in the "
                "SageMaker console and logs",
                None,
                "pass secrets through AWS Secrets Manager or the job's IAM role",
            )
        )
    return problems


def _toolkit_hyperparameter_problems(name: str, value: Any) -> list[Problem]:
    encoded = wire.encode(value)
    if len(encoded) <= wire.MAX_VALUE_LENGTH:
        return []
    field = "custom_mpi_options" if name.endswith("custom_mpi_options") else ""
    return [
        Problem(
            f"strategy.{field}".rstrip("."),
            f"becomes the {name} hyperparameter, {len(encoded)} characters once "
            f"JSON-encoded; SageMaker accepts at most {wire.MAX_VALUE_LENGTH}",
            None,
            "shorter settings",
        )
    ]


def _count_problems(spec: JobSpec, toolkit: dict[str, Any]) -> list[Problem]:
    added = SDK_HYPERPARAMETER_COUNT + len(added_hyperparameters(spec, toolkit))
    if len(spec.hyperparameters) + added <= wire.MAX_HYPERPARAMETERS:
        return []
    return [
        Problem(
            "hyperparameters",
            f"{len(spec.hyperparameters)} hyperparameters "
            f"plus the {added} SageMaker and smdist add exceed SageMaker's "
            f"limit of {wire.MAX_HYPERPARAMETERS}",
            None,
            f"at most {wire.MAX_HYPERPARAMETERS - added}",
        )
    ]
