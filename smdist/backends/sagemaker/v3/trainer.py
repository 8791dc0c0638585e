"""A Plan as SageMaker Python SDK v3 objects: the ``distributed=`` config and a ``ModelTrainer``.

SDK v3 (``sagemaker`` 3.x) has no estimators. Its ``ModelTrainer`` runs the job's code through
its own drivers (``sm_drivers`` channel, ``sm_train.sh``) instead of the image's training
toolkit, and has typed configs for three launchers only: ``Torchrun``, ``Torchrun(smp=SMP(...))``
and ``MPI``. PyTorch DDP (either launcher) and SMP v2 map to ``Torchrun``; MWMS, smddp, SMP v1
and Horovod run through smdist's own driver (``v3_drivers.SmdistDriver``), shipped in the same
channel, as does every job on a heterogeneous cluster. For users who own their SDK calls,
``model_trainer(plan, ...)`` returns a configured ModelTrainer that has not been submitted:
``.train()`` is the caller's.

The SDK itself (its version, a Session) is ``session``'s; ModelTrainer's arguments, read from
smdist's own request, are ``trainer_arguments``'s; the ModelTrainer subclass that sends what v3
has no setting for (the profiler off, metric time series, MLflow) is ``trainer_class``'s. The
SDK is imported inside the functions: ``import smdist`` stays light, and this module imports
with SDK v2 installed (v2 and v3 cannot be installed together).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import Any

from smdist.backends.aws_region import DRY_RUN_REGION, resolve_region
from smdist.backends.sagemaker.account import resolve_role
from smdist.backends.sagemaker.buckets import require_bucket
from smdist.backends.sagemaker.dry_run_value import BUCKET_VARIABLE
from smdist.backends.sagemaker.v3.carriage import carriage_problems
from smdist.backends.sagemaker.v3.driver_config import plan_driver_config
from smdist.backends.sagemaker.v3.drivers import (
    distributed_object,
    shipped_requirements,
    source_code,
)
from smdist.backends.sagemaker.v3.session import (
    SDK_CONFIG,
    as_session,
    require_sdk_v3,
    sagemaker_session,
    sdk_version,
)
from smdist.backends.sagemaker.v3.trainer_arguments import (
    trainer_kwargs,
    trainer_request,
    training_image,
    with_job_settings,
)
from smdist.backends.sagemaker.v3.trainer_class import trainer_class, with_every_job_settings
from smdist.errors import Problem, SpecError
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission


# ---- distributed= --------------------------------------------------------------------------
def model_trainer_distributed(plan: Plan) -> Any:
    """The SDK v3 ``distributed=`` object for the plan's launch.

    PyTorch DDP (either launcher) -> ``Torchrun``; SMP v2 -> ``Torchrun(smp=SMP(...))`` with
    the settings smdist renders in ``mp_parameters``. MWMS, ParameterServer, smddp, SMP v1,
    Horovod, and DDP with ``max_restarts`` -> smdist's own driver (``SmdistDriver``), which
    launches them as the training toolkit does. Processes per host are always stated, never
    left to the driver's GPU count.
    """
    require_sdk_v3()
    return distributed_object(plan_driver_config(plan))


# ---- the ModelTrainer ----------------------------------------------------------------------
def _source_code(plan: Plan, code_s3_uri: str | None, keep: list[str]) -> Any:
    """The SourceCode: the bundle already in S3, or staged into a directory v3 uploads."""
    if code_s3_uri:
        return source_code(plan, code_s3_uri, shipped_requirements(plan))
    source_dir = tempfile.mkdtemp(prefix="smdist-v3-code-")
    keep.append(source_dir)
    files = packaging.stage(plan, source_dir)  # smdist's file list: ignore rules, no secrets
    return source_code(plan, source_dir, shipped_requirements(plan, files))


def _job_role(plan: Plan, role: str | None) -> str:
    """``role``, the job file's, or ``SMDIST_ROLE``; SpecError when there is none."""
    job_role = resolve_role(plan, role)
    if not job_role:
        raise SpecError(
            [
                Problem(
                    "role",
                    "no IAM role for the job: pass role=, set `role:` in the job file, or "
                    "SMDIST_ROLE",
                    valid="arn:aws:iam::<account>:role/<SageMaker execution role>",
                )
            ]
        )
    return job_role


def _session_and_bucket(
    plan: Plan, session: Any, region: str | None, bucket: str | None
) -> tuple[Any, str]:
    """(the v3 Session, the job's bucket): a named bucket (``bucket``, else ``SMDIST_BUCKET``)
    must exist; without one, the SDK's default bucket (the only one that may be created)."""
    named = bucket or os.environ.get(BUCKET_VARIABLE)
    sm_session = as_session(session, resolve_region(region, plan.spec.region), named or "")
    if named:
        require_bucket(sm_session.boto_session, named, "bucket" if bucket else BUCKET_VARIABLE)
    else:  # only the SDK's own default bucket may be created
        named = sm_session.default_bucket()
    return sm_session, named


def _configured_trainer(
    submission: Submission,
    sm_session: Any,
    distributed: Any,
    code_s3_uri: str | None,
    kwargs: dict[str, Any],
) -> Any:
    """The ModelTrainer with smdist's metric definitions; staged code lives as long as it."""
    from sagemaker.core.training.configs import MetricDefinition

    keep: list[str] = []
    try:
        # ModelTrainer, plus the profiler off and metric time series on (trainer_class).
        trainer = trainer_class()(
            sagemaker_session=sm_session,
            role=submission.role,
            base_job_name=submission.job_name,
            source_code=_source_code(submission.plan, code_s3_uri, keep),
            distributed=distributed,
            **kwargs,
        )
    except BaseException:
        for directory in keep:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    # The ready scripts' metric lines and the user's (the definitions the SDK v2 path sends).
    definitions = submission.plan.metric_definitions
    trainer.with_metric_definitions(
        [MetricDefinition(name=m["Name"], regex=m["Regex"]) for m in definitions]
    )
    for directory in keep:  # the staged code lives as long as the trainer that uploads it
        weakref.finalize(trainer, shutil.rmtree, directory, ignore_errors=True)
    return trainer


def model_trainer(
    plan: Plan,
    *,
    role: str | None = None,
    bucket: str | None = None,
    region: str | None = None,
    job_name: str | None = None,
    code_s3_uri: str | None = None,
    session: Any = None,
) -> Any:
    """A configured, unsubmitted SDK v3 ``ModelTrainer`` for ``plan``; ``.train()`` submits.

    ``job_name`` (default: the spec's name) is v3's ``base_job_name``: v3 appends
    ``-<YYYYmmddHHMMSS>`` when it submits. ``code_s3_uri`` is the job's code tarball already in
    S3 (``.../sourcedir.tar.gz``, as the SDK v2 backend uploads it); without it the code is
    staged locally and v3 uploads it when ``train()`` runs. ``session``: a boto3 Session or an
    SDK v3 Session (default: a boto3 Session for ``region``). ``role``, ``bucket`` and
    ``region`` default as for ``smdist submit``: the job file's role, ``SMDIST_ROLE``; a named
    bucket (or ``SMDIST_BUCKET``), which must exist (one HeadBucket), else the SDK's default
    bucket; the job file's region, ``AWS_REGION``, the AWS configuration. v3 still resolves the
    role unless ``SAGEMAKER_VALIDATE_ROLE=false``.
    """
    require_sdk_v3()
    spec = plan.spec
    distributed = model_trainer_distributed(plan)

    training_image(plan, resolve_region(region, spec.region) or DRY_RUN_REGION)  # before AWS
    problems = carriage_problems(plan)  # what v3 cannot carry: before AWS too
    if problems:
        raise SpecError(problems)
    job_role = _job_role(plan, role)
    sm_session, job_bucket = _session_and_bucket(plan, session, region, bucket)
    submission = plan.bind(
        job_name=job_name or spec.name,  # v3's base_job_name: it appends a timestamp
        region=region or spec.region or sm_session.boto_session.region_name,
        bucket=job_bucket,
        role=job_role,
        code_uri=code_s3_uri or "",
    )
    request = trainer_request(submission)  # fails before staging
    kwargs = trainer_kwargs(submission, request)
    trainer = _configured_trainer(submission, sm_session, distributed, code_s3_uri, kwargs)
    # TensorBoard's default prefix is the job's name, which v3 makes when train() runs.
    named = spec.tensorboard is not None and spec.tensorboard.s3_uri is not None
    return with_job_settings(trainer, request, None if named else job_bucket)


__all__ = [
    "SDK_CONFIG",
    "model_trainer",
    "model_trainer_distributed",
    "require_sdk_v3",
    "sagemaker_session",
    "sdk_version",
    "trainer_class",
    "trainer_kwargs",
    "training_image",
    "with_every_job_settings",
]
