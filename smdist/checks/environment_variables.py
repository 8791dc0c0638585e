"""Checks of a job's environment variables: count, names, reserved names, lengths, credentials."""

from __future__ import annotations

from smdist.catalog import wire
from smdist.checks.values import looks_like_secret
from smdist.errors import Problem
from smdist.spec.api_shapes import ENV_NAME, SECRET_NAME
from smdist.spec.job import JobSpec

RESERVED_ENVIRONMENT_PREFIX = "SMDIST_"
AWS_CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def added_environment(spec: JobSpec) -> dict[str, str]:
    """smdist's own ``SMDIST_*`` settings, which travel in the job's environment."""
    return spec.strategy.smdist_environment(spec.cluster, spec.entry_point)


def check_environment(spec: JobSpec) -> list[Problem]:
    """The count of the job's environment entries, then every problem of each entry."""
    problems = []
    added = len(added_environment(spec))
    if len(spec.environment) + added > wire.MAX_ENVIRONMENT_ENTRIES:
        problems.append(
            Problem(
                "environment",
                f"{len(spec.environment)} entries plus the {added} smdist adds; SageMaker "
                f"accepts at most {wire.MAX_ENVIRONMENT_ENTRIES}",
                None,
                f"at most {wire.MAX_ENVIRONMENT_ENTRIES - added}",
            )
        )
    for name, value in spec.environment.items():
        problems += _entry_problems(name, value)
    return problems


def _entry_problems(name: str, value: str) -> list[Problem]:
    problems = []
    path = f"environment.{name}"
    if name.upper().startswith(RESERVED_ENVIRONMENT_PREFIX):
        problems.append(
            Problem(
                path,
                "is reserved: smdist sets SMDIST_* variables from the strategy",
                name,
                "a name not starting with SMDIST_ (set the strategy's field instead)",
            )
        )
    if not ENV_NAME.match(name):
        problems.append(
            Problem(
                path,
                "is not an environment variable name",
                name,
                "letters, digits and _, not starting with a digit",
            )
        )
    if len(value) > wire.MAX_ENVIRONMENT_VALUE_LENGTH:
        problems.append(
            Problem(
                path,
                f"value is {len(value)} characters",
                None,
                f"at most {wire.MAX_ENVIRONMENT_VALUE_LENGTH}",
            )
        )
    problems += _credential_problems(path, name, value)
    return problems


def _credential_problems(path: str, name: str, value: str) -> list[Problem]:
    if name.upper() in AWS_CREDENTIAL_VARIABLES or looks_like_secret(value):
        return [
            Problem(
                path,
                "is an AWS credential; the job's IAM role gives it AWS access without one",
                None,
                "remove it and grant the role the permissions",
            )
        ]
    if SECRET_NAME.search(name):
        return [
            Problem(
                path,
                "looks like a secret; job environment variables are "
                "visible in DescribeTrainingJob and the console",
                severity="warning",
            )
        ]
    return []
