"""What SDK v2's estimators cannot send, found before any AWS call and any SDK import.

The request the toolkit's route renders (``request.create_training_job_request``) states every
setting of the job; the estimator builds its own request from its arguments, and for some
settings it has none. A job with one of them is refused, naming the field, rather than sent
without it: SDK v3's ``ModelTrainer`` (``smdist[sagemaker]``) sends them.
"""

from __future__ import annotations

from smdist.errors import Problem, SpecError
from smdist.planning.plan import Plan

SDK_V3 = "SDK v3 (pip install 'smdist[sagemaker]')"


def carriage_problems(plan: Plan) -> list[Problem]:
    """Every setting of ``plan`` that SDK v2's estimator call cannot carry."""
    spec = plan.spec
    cluster = spec.cluster
    problems = []
    if cluster.instance_preferences:
        problems.append(
            Problem(
                "cluster.instance_preferences",
                "SDK v2 cannot send instance preferences (ResourceConfig.InstancePreferences): "
                "its estimators take no such argument",
                [choice.instance_type for choice in cluster.instance_preferences],
                f"one instance_type, or {SDK_V3}, which sends them",
            )
        )
    if spec.mlflow is not None:
        problems.append(
            Problem(
                "mlflow",
                "SDK v2 cannot send MLflow tracking (MlflowConfig): its estimators take no "
                "such argument",
                spec.mlflow.tracking_server_arn,
                f"leave mlflow out, or {SDK_V3}, which sends it",
            )
        )
    groups = list(getattr(spec.strategy, "instance_groups", []))  # only some strategies take it
    if cluster.instance_groups and len(groups) > 1:
        problems.append(
            Problem(
                "strategy.instance_groups",
                "SDK v2 starts the distributed program on one instance group only (its "
                "distribution takes one group: fw_utils.validate_distribution)",
                groups,
                f"one of {groups}",
            )
        )
    routed = sorted(name for name, c in spec.inputs.items() if c.instance_groups)
    if spec.network.isolation and routed:
        problems.append(
            Problem(
                "network.isolation",
                "under SDK v2 a network-isolated job's code channel is added by the estimator, "
                "on every host with no InstanceGroupNames, and SageMaker takes every channel "
                f"on instance groups or none (these name groups: {', '.join(routed)})",
                True,
                "network.isolation false, channels without instance_groups, or "
                f"{SDK_V3}, which puts the code channel on the groups too",
            )
        )
    return problems


def check(plan: Plan) -> None:
    """SpecError for what SDK v2 cannot send (the route's check, before packing)."""
    problems = carriage_problems(plan)
    if problems:
        raise SpecError(problems)


__all__ = ["carriage_problems", "check"]
