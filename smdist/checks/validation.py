"""Checks that need the whole job: strategy vs. cluster vs. framework, and the wire limits.

Every check returns ``Problem`` values (errors and warnings) so a user sees all of them at once;
``raise_for_errors`` turns the errors into a ``SpecError``. Nothing here performs I/O.
"""

from __future__ import annotations

from typing import Any

from smdist.catalog import wire
from smdist.checks.catalog import check_api_limits, check_container
from smdist.checks.v3_names import unexportable_name_problems
from smdist.checks.values import looks_like_secret, nul_problems
from smdist.errors import Problem, SpecError
from smdist.spec.job import ENV_NAME, HYPERPARAMETER_NAME, SECRET_NAME, JobSpec

RESERVED_PREFIXES = ("sagemaker_",)
RESERVED_ENVIRONMENT_PREFIX = "SMDIST_"
RESERVED_NAMES = ("mp_parameters", "model_dir")
AWS_CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
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


def added_environment(spec: JobSpec) -> dict[str, str]:
    """smdist's own ``SMDIST_*`` settings, which travel in the job's environment."""
    return spec.strategy.smdist_environment(spec.cluster, spec.entry_point)


def check_spec(spec: JobSpec, toolkit: dict[str, Any] | None = None) -> list[Problem]:
    """Every error and warning of ``spec``; ``toolkit``: the toolkit hyperparameters of the
    plan's launch (rendered here only for a spec that is not being planned)."""
    nul = nul_problems(spec.model_dump(by_alias=True))
    if nul:  # nothing else can be trusted to handle these values
        return nul
    if toolkit is None:
        toolkit = spec.strategy.launch(spec.cluster, spec.entry_point).toolkit_hyperparameters
    problems = _check_framework(spec)
    problems += spec.strategy.check(
        spec.cluster, spec.code.framework_version, dict(spec.hyperparameters)
    )
    problems += _check_instance(spec)
    problems += _check_hyperparameters(spec, toolkit)
    problems += _check_environment(spec)
    problems += _check_spot_and_pools(spec)
    problems += check_api_limits(spec)
    problems += _check_v3_names(spec)
    return problems


def raise_for_errors(problems: list[Problem]) -> list[Problem]:
    """Raise a SpecError when any problem is an error; return the warnings otherwise."""
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise SpecError(errors)
    return [p for p in problems if p.severity == "warning"]


def _check_framework(spec: JobSpec) -> list[Problem]:
    """code.framework agrees with the strategy, then the container exists and fits the job."""
    strategy = spec.strategy
    framework = spec.code.framework
    if framework is None:
        return check_container(spec)
    if framework not in strategy.frameworks:
        return [
            Problem(
                "code.framework",
                f"the {strategy.kind} strategy does not run with {framework}",
                framework,
                ", ".join(strategy.frameworks),
            )
        ]
    if framework != strategy.framework:
        return [
            Problem(
                "code.framework",
                f"the code is {framework} but strategy.framework is {strategy.framework}",
                framework,
                strategy.framework,
            )
        ]
    return check_container(spec)


def _check_instance(spec: JobSpec) -> list[Problem]:
    cluster = spec.cluster
    info = cluster.info
    if cluster.is_local_mode:
        return []
    if info is None:
        return [
            Problem(
                "cluster.instance_type",
                f"{cluster.instance_type} is a SageMaker instance type smdist's catalogue has no "
                "facts for: GPU count, price and library support are unknown ('auto' means 1)",
                severity="warning",
            )
        ]
    if info.retired:
        return [
            Problem(
                "cluster.instance_type",
                f"{cluster.instance_type} is retired and no longer offered for new training "
                "jobs" + (f" ({info.note})" if info.note else ""),
                severity="warning",
            )
        ]
    return []


def _check_hyperparameters(spec: JobSpec, toolkit: dict[str, Any]) -> list[Problem]:
    problems = []
    for name, value in spec.hyperparameters.items():
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
    for name, value in toolkit.items():
        encoded = wire.encode(value)
        if len(encoded) > wire.MAX_VALUE_LENGTH:
            field = "custom_mpi_options" if name.endswith("custom_mpi_options") else ""
            problems.append(
                Problem(
                    f"strategy.{field}".rstrip("."),
                    f"becomes the {name} hyperparameter, {len(encoded)} characters once "
                    f"JSON-encoded; SageMaker accepts at most {wire.MAX_VALUE_LENGTH}",
                    None,
                    "shorter settings",
                )
            )
    added = SDK_HYPERPARAMETER_COUNT + len(added_hyperparameters(spec, toolkit))
    if len(spec.hyperparameters) + added > wire.MAX_HYPERPARAMETERS:
        problems.append(
            Problem(
                "hyperparameters",
                f"{len(spec.hyperparameters)} hyperparameters "
                f"plus the {added} SageMaker and smdist add exceed SageMaker's "
                f"limit of {wire.MAX_HYPERPARAMETERS}",
                None,
                f"at most {wire.MAX_HYPERPARAMETERS - added}",
            )
        )
    return problems


def _check_environment(spec: JobSpec) -> list[Problem]:
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
        if name.upper() in AWS_CREDENTIAL_VARIABLES or looks_like_secret(value):
            problems.append(
                Problem(
                    path,
                    "is an AWS credential; the job's IAM role gives it AWS access without one",
                    None,
                    "remove it and grant the role the permissions",
                )
            )
        elif SECRET_NAME.search(name):
            problems.append(
                Problem(
                    path,
                    "looks like a secret; job environment variables are "
                    "visible in DescribeTrainingJob and the console",
                    severity="warning",
                )
            )
    return problems


def _check_spot_and_pools(spec: JobSpec) -> list[Problem]:
    problems = []
    if spec.spot.max_wait is not None and not spec.spot.enabled:
        problems.append(
            Problem(
                "spot.max_wait",
                "only applies to managed spot training",
                spec.spot.max_wait,
                "set spot.enabled: true, or remove max_wait",
            )
        )
    if spec.spot.max_wait is not None and spec.spot.max_wait < spec.max_run:
        problems.append(
            Problem(
                "spot.max_wait",
                f"must be >= max_run ({spec.max_run}): SageMaker "
                "waits for spot capacity and runs within max_wait",
                spec.spot.max_wait,
                f">= {spec.max_run}",
            )
        )
    if spec.spot.enabled and spec.keep_alive:
        problems.append(
            Problem(
                "keep_alive",
                "warm pools are not available with managed spot training",
                spec.keep_alive,
                "0 with spot, or disable spot",
            )
        )
    if spec.spot.enabled and (spec.checkpoint is None or spec.checkpoint.s3_uri is None):
        problems.append(
            Problem(
                "checkpoint.s3_uri",
                "spot training without checkpoints restarts from scratch after every interruption",
                severity="warning",
            )
        )
    return problems


def _check_v3_names(spec: JobSpec) -> list[Problem]:
    """Names SDK v3's container script cannot export: a warning here, whatever SDK is installed
    (under SDK v3 submit, validate and plan refuse them: ``v3_request.carriage_problems``)."""
    if spec.cluster.is_local_mode:  # SDK v2's local mode only: no v3 container script
        return []
    valid_names = [name for name in spec.hyperparameters if HYPERPARAMETER_NAME.match(name)]
    return unexportable_name_problems(spec.inputs, valid_names, "warning")


def check_or_raise(spec: JobSpec, toolkit: dict[str, Any] | None = None) -> list[Problem]:
    """All checks; raises SpecError on errors, returns the warnings."""
    return raise_for_errors(check_spec(spec, toolkit))


__all__ = [
    "added_environment",
    "check_or_raise",
    "check_spec",
    "effective_framework",
    "raise_for_errors",
    "SpecError",
]
