"""plan(spec) -> Plan: everything derived from a JobSpec, nothing fetched.

A Plan is the dry run as a value (TorchX's habit): the CLI's ``plan`` and ``--dry-run``, a
notebook's display and every backend read this same object, so what a user is shown is what
runs. Planning is pure — no I/O, no SDK import — and fast enough for 256-host jobs.
"""

from __future__ import annotations

from typing import Any

from smdist.checks.reading import as_job_spec
from smdist.checks.validation import check_or_raise, effective_framework
from smdist.planning.cost import job_cost
from smdist.planning.plan_value import (
    BUCKET_PLACEHOLDER,
    ESTIMATORS,
    JOB_NAME_PLACEHOLDER,
    REGION_PLACEHOLDER,
    SUBMIT_DIRECTORY_PLACEHOLDER,
    Cost,
    PlanValue,
)
from smdist.planning.submission import Submission, bind
from smdist.spec.job import JobSpec

__all__ = [
    "BUCKET_PLACEHOLDER",
    "JOB_NAME_PLACEHOLDER",
    "REGION_PLACEHOLDER",
    "SUBMIT_DIRECTORY_PLACEHOLDER",
    "Cost",
    "Plan",
    "plan",
]


class Plan(PlanValue):
    """The plan: its values (``PlanValue``), bound to one job by ``bind``, shown in a
    notebook as a table and the topology's picture."""

    def bind(
        self,
        *,
        job_name: str,
        region: str,
        bucket: str | None,
        role: str | None,
        code_uri: str,
        model_dir: str | None = None,
    ) -> Submission:
        """This plan bound to one job: see ``smdist.planning.submission``."""
        return bind(
            self,
            job_name=job_name,
            region=region,
            bucket=bucket,
            role=role,
            code_uri=code_uri,
            model_dir=model_dir,
        )

    def _repr_html_(self) -> str:
        from smdist.planning.display import plan_html  # lazy: for notebooks only

        return plan_html(self)


def plan(spec: JobSpec | Any) -> Plan:
    """Check ``spec`` and derive what SageMaker will run. Raises SpecError on any error.

    Pure: no I/O, no backend value. What depends on the submission (the job's name, region,
    bucket, role and code location) shows as a placeholder until ``Plan.bind``.
    """
    spec = as_job_spec(spec)  # a JobSpec, or a dict of its fields (typed objects or dicts)
    strategy, cluster = spec.strategy, spec.cluster
    launch = strategy.launch(cluster, spec.entry_point)
    warnings = check_or_raise(spec, launch.toolkit_hyperparameters)
    framework = effective_framework(spec)
    return Plan(
        spec=spec,
        job_name=JOB_NAME_PLACEHOLDER.format(name=spec.name),
        framework=framework,
        entry_point=spec.entry_point,
        source_dir=spec.code.source_dir,
        topology=strategy.topology(cluster.instance_count, launch.processes_per_host),
        launch=launch,
        distribution=strategy.render_distribution(cluster),
        # The script's arguments are exactly the user's hyperparameters (plus what SageMaker
        # adds); smdist's own settings travel in the environment.
        hyperparameters=dict(spec.hyperparameters),
        environment={**spec.environment, **strategy.smdist_environment(cluster, spec.entry_point)},
        estimator=ESTIMATORS[framework],
        gpus_per_host=cluster.gpus_per_host,
        cost=job_cost(spec),
        warnings=warnings,
    )
