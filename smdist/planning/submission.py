"""A Plan bound to one job: its name, region, bucket, role and code — the request's values.

``plan(spec)`` derives everything that does not depend on where and when the job is submitted,
and shows placeholders for the rest. ``Plan.bind(...)`` fills those in once, from the values a
backend resolved (``--dry-run`` too), and returns a ``Submission``: the wire hyperparameters
and estimator arguments of that one job, with no placeholder left. Backends hand this value on;
none of them plans again. Binding derives nothing new: the SDK's own hyperparameters
(``sagemaker_job_name``, ``sagemaker_submit_directory``, ``sagemaker_region``) and the
TensorFlow estimator's ``model_dir`` are computed by the same functions ``plan`` uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smdist.catalog import wire
from smdist.errors import Problem, SpecError
from smdist.planning.plan_value import PlanValue
from smdist.planning.wire_values import (
    CODE_CHANNEL,
    CONTAINER_MODEL_DIR,
    ISOLATED_SUBMIT_DIRECTORY,
    TARBALL,
    submit_directory,
    tf_model_dir,
    wire_values,
)
from smdist.spec.api_shapes import JOB_NAME

__all__ = [
    "CODE_CHANNEL",
    "CONTAINER_MODEL_DIR",
    "ISOLATED_SUBMIT_DIRECTORY",
    "TARBALL",
    "Submission",
    "bind",
]


@dataclass(frozen=True)
class Submission:
    """One job's bound values: what CreateTrainingJob (or the local emulation) receives."""

    plan: PlanValue  # a Plan
    job_name: str
    region: str
    bucket: str | None
    role: str | None
    code_uri: str
    wire_hyperparameters: dict[str, str]
    estimator_kwargs: dict[str, Any]

    @property
    def spec(self):
        return self.plan.spec


def bind(
    plan: PlanValue,
    *,
    job_name: str,
    region: str,
    bucket: str | None,
    role: str | None,
    code_uri: str,
    model_dir: str | None = None,
) -> Submission:
    """``plan`` bound to one job. ``model_dir`` replaces the TensorFlow estimator's default
    (the local backends point it at a host's model directory); without it, TensorFlow jobs need
    ``bucket`` unless ``output_path`` is an S3 URI."""
    spec = plan.spec
    problems = []
    if not JOB_NAME.match(job_name or ""):
        problems.append(
            Problem(
                "job_name",
                "is not a SageMaker job name",
                job_name,
                "1-63 letters, digits and hyphens, starting with a letter or digit",
            )
        )
    if not region:
        problems.append(Problem("region", "is needed to submit", region, "e.g. us-west-2"))
    if problems:
        raise SpecError(problems)
    if plan.framework == "tensorflow" and model_dir is None:
        mpi = bool(plan.launch.toolkit_hyperparameters.get("sagemaker_mpi_enabled"))
        if bucket is None and not mpi and not (spec.output_path or "").startswith("s3://"):
            raise SpecError([Problem("bucket", "is needed for TensorFlow's model_dir")])
        model_dir = tf_model_dir(spec.output_path, job_name, bucket or "", mpi)
    values = wire_values(
        plan.hyperparameters,
        plan.launch,
        plan.framework,
        job_name=job_name,
        submit_directory=submit_directory(spec.network.isolation, code_uri),
        region=region,
        model_dir=model_dir,
    )
    kwargs = dict(plan.estimator_kwargs)
    if role:
        kwargs["role"] = role
    return Submission(
        plan=plan,
        job_name=job_name,
        region=region,
        bucket=bucket,
        role=kwargs.get("role"),
        code_uri=code_uri,
        wire_hyperparameters=wire.encode_hyperparameters(values),
        estimator_kwargs=kwargs,
    )
