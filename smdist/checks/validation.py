"""Checks that need the whole job: strategy vs. cluster vs. framework, and the wire limits.

The hyperparameters' and environment's own checks are in ``smdist.checks.hyperparameters`` and
``smdist.checks.environment_variables``; ``check_spec`` runs them with the rest.

Every check returns ``Problem`` values (errors and warnings) so a user sees all of them at once;
``raise_for_errors`` turns the errors into a ``SpecError``. Nothing here performs I/O.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from smdist import catalog
from smdist.checks.api_limits import check_api_limits
from smdist.checks.capacity import check_capacity
from smdist.checks.catalog import check_container
from smdist.checks.dlc_image_uri import check_dlc_image_uri
from smdist.checks.environment_variables import (
    AWS_CREDENTIAL_VARIABLES as AWS_CREDENTIAL_VARIABLES,
)
from smdist.checks.environment_variables import (
    RESERVED_ENVIRONMENT_PREFIX as RESERVED_ENVIRONMENT_PREFIX,
)
from smdist.checks.environment_variables import added_environment, check_environment
from smdist.checks.file_systems import check_file_systems, check_tracking
from smdist.checks.gpu_kernels import check_gpu_kernels
from smdist.checks.hyperparameters import RESERVED_NAMES as RESERVED_NAMES
from smdist.checks.hyperparameters import RESERVED_PREFIXES as RESERVED_PREFIXES
from smdist.checks.hyperparameters import SDK_HYPERPARAMETER_COUNT as SDK_HYPERPARAMETER_COUNT
from smdist.checks.hyperparameters import added_hyperparameters as added_hyperparameters
from smdist.checks.hyperparameters import check_hyperparameters, effective_framework
from smdist.checks.ready_keras import check_ready_keras
from smdist.checks.tuning import check_metric_definitions, check_tuning
from smdist.checks.v3_names import unexportable_name_problems
from smdist.checks.values import nul_problems
from smdist.checks.volume_encryption import check_volume_encryption
from smdist.errors import Problem, SpecError
from smdist.spec.api_shapes import HYPERPARAMETER_NAME
from smdist.spec.job import JobSpec


def check_spec(spec: JobSpec, toolkit: dict[str, Any] | None = None) -> list[Problem]:
    """Every error and warning of ``spec``; ``toolkit``: the toolkit hyperparameters of the
    plan's launch (rendered here only for a spec that is not being planned)."""
    nul = nul_problems(spec.model_dump(by_alias=True))
    if nul:  # nothing else can be trusted to handle these values
        return nul
    if toolkit is None:
        toolkit = spec.strategy.launch(spec.cluster, spec.entry_point).toolkit_hyperparameters
    problems = _check_framework(spec)
    problems += check_dlc_image_uri(spec)
    problems += check_gpu_kernels(spec)
    problems += spec.strategy.check(
        spec.cluster, spec.code.framework_version, dict(spec.hyperparameters)
    )
    problems += _check_instance(spec)
    problems += check_volume_encryption(spec)
    problems += check_ready_keras(spec)
    problems += check_hyperparameters(spec, toolkit)
    problems += check_environment(spec)
    problems += _check_spot_and_pools(spec)
    problems += check_api_limits(spec)
    problems += _check_v3_names(spec)
    problems += check_metric_definitions(spec)
    static = len(spec.hyperparameters) + len(added_hyperparameters(spec, toolkit))
    problems += check_tuning(spec, static + SDK_HYPERPARAMETER_COUNT)
    problems += check_capacity(spec) + check_file_systems(spec) + check_tracking(spec)
    return problems + _check_other_preferences(spec, problems)


def _check_other_preferences(spec: JobSpec, found: list[Problem]) -> list[Problem]:
    """A preference after the first is checked as the job's instance type, as SageMaker may
    start the job on it: what it cannot run (the image's GPU architectures, a library's
    instance list, EFA) is refused like a plain instance type, at its own field."""
    seen = {(p.path, p.message) for p in found}
    problems = []
    for index, choice in enumerate(spec.cluster.instance_preferences[1:], start=1):
        cluster = {"instance_type": choice.instance_type, "instance_count": choice.instance_count}
        if spec.cluster.volume_size is not None:
            cluster["volume_size"] = spec.cluster.volume_size
        variant = spec.model_copy(update={"cluster": cluster})
        field = f"cluster.instance_preferences[{index}]"
        for problem in check_spec(variant):
            if (problem.path, problem.message) in seen:
                continue
            path = problem.path.replace("cluster.", f"{field}.", 1)
            if not path.startswith(field):
                path = f"{field}: {path}" if path else field
            problems.append(replace(problem, path=path))
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
        why = catalog.unknown_instance_types().get(cluster.instance_type)
        return [
            Problem(
                "cluster.instance_type",
                f"{cluster.instance_type} is a SageMaker instance type smdist's catalogue has no "
                "facts for: GPU count, price and library support are unknown ('auto' means 1)"
                + (f" ({why})" if why else ""),
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
