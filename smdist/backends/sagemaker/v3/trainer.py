"""A Plan as SageMaker Python SDK v3 objects: the ``distributed=`` config and a ``ModelTrainer``.

SDK v3 (``sagemaker`` 3.x) has no estimators. Its ``ModelTrainer`` runs the job's code through
its own drivers (``sm_drivers`` channel, ``sm_train.sh``) instead of the image's training
toolkit, and has typed configs for three launchers only: ``Torchrun``, ``Torchrun(smp=SMP(...))``
and ``MPI``. PyTorch DDP (either launcher) and SMP v2 map to ``Torchrun``; MWMS, smddp, SMP v1
and Horovod run through smdist's own driver (``v3_drivers.SmdistDriver``), shipped
in the same channel. For users who own their SDK calls, ``model_trainer(plan, ...)`` returns a
configured ModelTrainer that has not been submitted: ``.train()`` is the caller's.

The SDK is imported inside the functions: ``import smdist`` stays light, and this module imports
with SDK v2 installed (v2 and v3 cannot be installed together).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from importlib import metadata
from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.backends.sagemaker.v3.drivers import (
    distributed_object,
    shipped_requirements,
    source_code,
)
from smdist.backends.sagemaker.v3.request import plan_driver_config
from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission
from smdist.runtime.metrics import metric_definitions

# The SDK's "defaults" config, given explicitly: telemetry off, and no config file of the
# user's (~/.config/sagemaker) can change the job behind the plan's back.
SDK_CONFIG: dict[str, Any] = {
    "SchemaVersion": "1.0",
    "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}},
}


def sdk_version() -> str | None:
    """The installed ``sagemaker`` version, or None (v3's package has no ``__version__``)."""
    try:
        return metadata.version("sagemaker")
    except metadata.PackageNotFoundError:
        return None


def require_sdk_v3() -> None:
    """SpecError unless the SageMaker Python SDK 3.x (``sagemaker.train``) is importable."""
    version = sdk_version()
    if version is None or not version.startswith("3."):
        found = f"sagemaker {version} is installed" if version else "sagemaker is not installed"
        raise SpecError(
            [
                Problem(
                    "backend",
                    f"ModelTrainer needs the SageMaker Python SDK 3.x; {found}",
                    version,
                    "pip install 'sagemaker>=3,<4' (in an environment without SDK v2)",
                )
            ],
            CANNOT_RUN_HERE,
        )


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
_TRAINER_CLASS: Any = None


def with_every_job_settings(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` (what ``ModelTrainer._create_training_job_args`` returns, either form) with
    what smdist sets on every job and ModelTrainer has no setting for: the profiler off and
    metric time series on (``v3_request.EVERY_JOB_*``)."""
    if "AlgorithmSpecification" in request:  # boto3's form (PascalCase): pipelines, AWS Batch
        request["AlgorithmSpecification"] = {
            **request["AlgorithmSpecification"],
            **v3_request.EVERY_JOB_ALGORITHM,
        }
        request.update(v3_request.EVERY_JOB_REQUEST)
        return request
    from sagemaker.core.shapes import ProfilerConfig

    algorithm = request.get("algorithm_specification")
    if algorithm is not None:
        algorithm.enable_sage_maker_metrics_time_series = True
    request["profiler_config"] = ProfilerConfig(disable_profiler=True)
    return request


def trainer_class() -> Any:
    """v3's ``ModelTrainer``, sending what smdist sets on every job (``with_every_job_settings``)
    in the request ``train()`` builds; otherwise unchanged (a subclass, built on first use)."""
    global _TRAINER_CLASS
    if _TRAINER_CLASS is None:
        require_sdk_v3()
        from sagemaker.train import ModelTrainer

        class SmdistModelTrainer(ModelTrainer):
            """ModelTrainer whose request carries ProfilerConfig(DisableProfiler=True) and
            EnableSageMakerMetricsTimeSeries=True, as smdist's own requests do."""

            def _create_training_job_args(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
                return with_every_job_settings(super()._create_training_job_args(*args, **kwargs))

        _TRAINER_CLASS = SmdistModelTrainer
    return _TRAINER_CLASS


def sagemaker_session(boto_session: Any, bucket: str) -> Any:
    """An SDK v3 Session over ``boto_session`` with ``bucket`` and telemetry off."""
    require_sdk_v3()
    from sagemaker.core.helper.session_helper import Session

    return Session(boto_session=boto_session, default_bucket=bucket, sagemaker_config=SDK_CONFIG)


def _session(session: Any, region: str | None, bucket: str) -> Any:
    """``session`` as a v3 Session: a v3 Session as given, a boto3 Session wrapped."""
    if session is not None and hasattr(session, "boto_session"):
        return session
    import boto3

    boto = session or boto3.Session(region_name=region)
    return sagemaker_session(boto, bucket)


def training_image(plan: Plan, region: str) -> str:
    """``code.image_uri``, or the DLC URI from smdist's catalogue (v3's own tables are stale)."""
    return request_.training_image(plan, region)


def _source_code(plan: Plan, code_s3_uri: str | None, keep: list[str]) -> Any:
    """The SourceCode: the bundle already in S3, or staged into a directory v3 uploads."""
    if code_s3_uri:
        return source_code(plan, code_s3_uri, shipped_requirements(plan))
    source_dir = tempfile.mkdtemp(prefix="smdist-v3-code-")
    keep.append(source_dir)
    files = packaging.stage(plan, source_dir)  # smdist's file list: ignore rules, no secrets
    return source_code(plan, source_dir, shipped_requirements(plan, files))


def _channels(request: dict[str, Any]) -> list[Any]:
    """The user's channels of ``request`` as v3 configs (v3 adds the code and drivers)."""
    from sagemaker.core.training.configs import Channel, DataSource, S3DataSource

    channels = []
    for channel in request["InputDataConfig"]:
        name = channel["ChannelName"]
        if name in (v3_request.CODE_CHANNEL, v3_request.DRIVERS_CHANNEL):
            continue
        s3 = channel["DataSource"]["S3DataSource"]
        source = S3DataSource(
            s3_data_type=s3["S3DataType"],
            s3_uri=s3["S3Uri"],
            s3_data_distribution_type=s3["S3DataDistributionType"],
        )
        extra = {"input_mode": channel["InputMode"]} if "InputMode" in channel else {}
        channels.append(
            Channel(channel_name=name, data_source=DataSource(s3_data_source=source), **extra)
        )
    return channels


def trainer_kwargs(submission: Submission) -> dict[str, Any]:
    """ModelTrainer's arguments apart from session, role, name and code: read from the request
    smdist renders for ``submission`` (``v3_request``), so both say the same."""
    from sagemaker.core.training.configs import (
        CheckpointConfig,
        Compute,
        Networking,
        OutputDataConfig,
        StoppingCondition,
        Tag,
    )

    request = v3_request.create_training_job_request(
        submission,
        image=training_image(submission.plan, submission.region),
        drivers="",  # v3 uploads its own drivers
        metric_definitions=[],
    )
    resources, stopping = request["ResourceConfig"], request["StoppingCondition"]
    output, vpc = request["OutputDataConfig"], request.get("VpcConfig", {})
    isolated = request.get("EnableNetworkIsolation")
    encrypted = request.get("EnableInterContainerTrafficEncryption")
    checkpoint = request.get("CheckpointConfig")
    return {
        "training_image": request["AlgorithmSpecification"]["TrainingImage"],
        "compute": Compute(
            instance_type=resources["InstanceType"],
            instance_count=resources["InstanceCount"],
            volume_size_in_gb=resources["VolumeSizeInGB"],
            volume_kms_key_id=resources.get("VolumeKmsKeyId"),
            keep_alive_period_in_seconds=resources.get("KeepAlivePeriodInSeconds"),
            enable_managed_spot_training=request.get("EnableManagedSpotTraining"),
        ),
        "stopping_condition": StoppingCondition(
            max_runtime_in_seconds=stopping["MaxRuntimeInSeconds"],
            max_wait_time_in_seconds=stopping.get("MaxWaitTimeInSeconds"),
        ),
        # Always explicit: v3 would otherwise resolve (and create) its default bucket while the
        # ModelTrainer is being constructed.
        "output_data_config": OutputDataConfig(
            s3_output_path=output["S3OutputPath"], kms_key_id=output.get("KmsKeyId")
        ),
        "networking": Networking(
            subnets=vpc.get("Subnets"),
            security_group_ids=vpc.get("SecurityGroupIds"),
            enable_network_isolation=isolated,
            enable_inter_container_traffic_encryption=encrypted,
        )
        if vpc or isolated or encrypted
        else None,
        "checkpoint_config": CheckpointConfig(
            s3_uri=checkpoint["S3Uri"], local_path=checkpoint["LocalPath"]
        )
        if checkpoint
        else None,
        "input_data_config": _channels(request) or None,
        "hyperparameters": request["HyperParameters"],
        "environment": dict(request.get("Environment", {})),
        "tags": [Tag(key=tag["Key"], value=tag["Value"]) for tag in request.get("Tags", [])]
        or None,
    }


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
    from smdist.backends.aws_region import DRY_RUN_REGION, resolve_region
    from smdist.backends.sagemaker.account import resolve_role
    from smdist.backends.sagemaker.buckets import require_bucket
    from smdist.backends.sagemaker.dry_run import BUCKET_VARIABLE

    training_image(plan, resolve_region(region, spec.region) or DRY_RUN_REGION)  # before AWS
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
    named = bucket or os.environ.get(BUCKET_VARIABLE)
    sm_session = _session(session, resolve_region(region, spec.region), named or "")
    if named:
        require_bucket(sm_session.boto_session, named, "bucket" if bucket else BUCKET_VARIABLE)
    else:  # only the SDK's own default bucket may be created
        named = sm_session.default_bucket()
    submission = plan.bind(
        job_name=job_name or spec.name,  # v3's base_job_name: it appends a timestamp
        region=region or spec.region or sm_session.boto_session.region_name,
        bucket=named,
        role=job_role,
        code_uri=code_s3_uri or "",
    )
    from sagemaker.core.training.configs import MetricDefinition

    kwargs = trainer_kwargs(submission)  # fails before staging
    keep: list[str] = []
    try:
        # ModelTrainer, plus the profiler off and metric time series on (trainer_class).
        trainer = trainer_class()(
            sagemaker_session=sm_session,
            role=job_role,
            base_job_name=submission.job_name,
            source_code=_source_code(plan, code_s3_uri, keep),
            distributed=distributed,
            **kwargs,
        )
    except BaseException:
        for directory in keep:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    # The metric lines smdist's runtime prints (the same definitions the SDK v2 path sends).
    trainer.with_metric_definitions(
        [MetricDefinition(name=m["Name"], regex=m["Regex"]) for m in metric_definitions()]
    )
    for directory in keep:  # the staged code lives as long as the trainer that uploads it
        weakref.finalize(trainer, shutil.rmtree, directory, ignore_errors=True)
    return trainer


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
