"""Run one job through the installed SDK line's own local mode, in the supervising process.

SDK v2: the framework estimator with a ``LocalSession`` (``sagemaker.local.image``). SDK v3:
``ModelTrainer(training_mode=Mode.LOCAL_CONTAINER)`` (``sagemaker.train.local``). Both
generate a ``docker-compose.yaml`` and run ``docker compose up``; this process belongs to the
job alone, so three of the SDK module's functions are replaced for it:

- ``_stream_output``: the SDKs take Compose's exit code 130 (interrupted) as success, so an
  interrupted job would report Completed with a model; here any non-zero exit fails.
- ``_aws_credentials``: with long-lived keys the SDKs write ``AWS_ACCESS_KEY_ID`` and
  ``AWS_SECRET_ACCESS_KEY`` in plain text into the compose file; only when asked.
- v3's ``_create_docker_host``: v3 has no ``local.container_config``; the settings v2 merges
  into every service (``shm_size``...) are merged the same way.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from smdist.backends.sagemaker import sdk
from smdist.backends.sagemaker.local_mode.run_file import LocalRun
from smdist.backends.sagemaker.local_mode.settings import CLOUD_ONLY
from smdist.planning.plan import Plan

LOCAL_MODE_ROLE = "arn:aws:iam::000000000000:role/smdist-local-mode-unused"


class ComposeExit(RuntimeError):
    """Docker Compose ended the containers with a non-zero exit code."""

    def __init__(self, code: int) -> None:
        self.code = code
        why = " (interrupted)" if code == 130 else ""
        super().__init__(
            f"the training containers failed: docker compose exited with code {code}{why}"
        )


def stream_output(process: Any) -> int:
    """Compose's output line by line into this process's stdout (the job's log)."""
    for raw in iter(process.stdout.readline, b""):
        sys.stdout.write(raw.decode("utf-8", "replace"))
        sys.stdout.flush()
    code = process.wait()
    if code != 0:
        raise ComposeExit(code)
    return code


def _credentials_policy(module: Any, run: LocalRun) -> None:
    if not run.pass_aws_credentials:
        module._aws_credentials = lambda session: None


def run_v2(run: LocalRun, plan: Plan) -> str | None:
    """The job through SDK v2's estimator in local mode; the model's file:// URI."""
    # lazy: SDK v2's modules, for a run under SDK v2 only
    from smdist.backends.sagemaker.v2 import estimator_kwargs, training_inputs

    sdk.import_sagemaker()
    from sagemaker.local import image

    image._stream_output = stream_output
    _credentials_policy(image, run)
    boto = sdk.boto_session(run.region)
    session = sdk.sagemaker_session(boto, run.bucket, local=True)
    local = {**run.sdk_local_config, "local_code": True}
    local["container_root"] = str(run.container_root)
    if run.container_config:
        local["container_config"] = run.container_config
    session.config = {"local": local}
    submission = plan.bind(
        job_name=run.name,
        region=run.region,
        bucket=run.bucket,
        role=run.role,
        code_uri=f"file://{run.code_dir}",
        model_dir=f"file://{run.output_dir}/model" if plan.framework == "tensorflow" else None,
    )

    kwargs = {k: v for k, v in estimator_kwargs(submission).items() if k not in CLOUD_ONLY}
    kwargs.update(
        source_dir=str(run.code_dir),
        instance_type=run.instance_type,
        output_path=f"file://{run.output_dir}",
        role=run.role,
    )
    with sdk.contained():
        estimator = sdk.estimator_class(plan.estimator)(sagemaker_session=session, **kwargs)
        estimator.fit(training_inputs(plan), job_name=run.name, wait=True, logs=False)
    return estimator.model_data


def _v3_channels(plan: Plan) -> list[Any]:
    """v3 channels: s3:// ones as the cloud backend sends them, file:// ones mounted."""
    from sagemaker.core.shapes import FileSystemDataSource
    from sagemaker.core.training.configs import Channel, DataSource, S3DataSource

    channels = []
    for name, channel in plan.spec.inputs.items():
        if channel.uri.startswith("file://"):
            # As ModelTrainer builds a local path's channel in LOCAL_CONTAINER mode.
            source = DataSource(
                file_system_data_source=FileSystemDataSource.model_construct(
                    directory_path=channel.uri[len("file://") :], file_system_type="EFS"
                )
            )
        else:
            source = DataSource(
                s3_data_source=S3DataSource(
                    s3_data_type="S3Prefix",
                    s3_uri=channel.uri,
                    s3_data_distribution_type=channel.distribution,
                )
            )
        channels.append(Channel(channel_name=name, data_source=source, input_mode="File"))
    return channels


def _merge_container_config(module: Any, config: dict[str, Any]) -> None:
    if not config:
        return
    container = module._LocalContainer
    original = container._create_docker_host

    def create_docker_host(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**config, **original(self, *args, **kwargs)}  # the SDK's keys win, as in v2

    container._create_docker_host = create_docker_host


def run_v3(run: LocalRun, plan: Plan) -> str | None:
    """The job through SDK v3's ModelTrainer in LOCAL_CONTAINER mode; the model's file:// URI."""
    from sagemaker.core.training.configs import Compute
    from sagemaker.train.local import local_container
    from sagemaker.train.model_trainer import Mode

    # lazy: SDK v3's modules, for a run under SDK v3 only
    from smdist.backends.sagemaker.v3 import trainer as v3
    from smdist.backends.sagemaker.v3.drivers import (
        distributed_object,
        requirements_file,
        source_code,
    )
    from smdist.backends.sagemaker.v3.request import plan_driver_config

    local_container._stream_output = stream_output
    _credentials_policy(local_container, run)
    _merge_container_config(local_container, run.container_config)
    # launch staged the code: its file list is the directory's
    files = [str(p.relative_to(run.code_dir)) for p in run.code_dir.rglob("*") if p.is_file()]
    submission = plan.bind(
        job_name=plan.spec.name,
        region=run.region,
        bucket="smdist-local-mode-unused",
        role=run.role,
        code_uri=f"file://{run.code_dir}",
    )
    kwargs = v3.trainer_kwargs(submission)
    cluster = plan.spec.cluster
    kwargs.update(
        compute=Compute(instance_type=run.instance_type, instance_count=cluster.instance_count),
        output_data_config=None,
        networking=None,
        checkpoint_config=None,
        tags=None,
        input_data_config=_v3_channels(plan) or None,
    )
    if run.pass_aws_credentials:  # v3 hands credentials on only through a session it holds
        import boto3

        session = boto3.Session(region_name=run.region)
        kwargs["sagemaker_session"] = v3.sagemaker_session(session, run.bucket or "unused")
    trainer = v3.trainer_class()(
        training_mode=Mode.LOCAL_CONTAINER,
        local_container_root=str(run.container_root),
        role=run.role,
        base_job_name=plan.spec.name,
        source_code=source_code(plan, str(run.code_dir), requirements_file(files)),
        distributed=distributed_object(plan_driver_config(plan)),
        **{k: v for k, v in kwargs.items() if v is not None},
    )
    trainer.train(wait=True, logs=False)
    return _keep_v3_archives(run)


def _keep_v3_archives(run: LocalRun) -> str | None:
    """The archives v3 leaves in ``<container root>/compressed_artifacts``, moved into the job's
    output directory, which keeps them; the model's file:// URI (None: the job wrote none)."""
    output = Path(run.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    for archive in ("model.tar.gz", "output.tar.gz"):
        found = run.container_root / "compressed_artifacts" / archive
        if found.is_file():
            shutil.move(str(found), output / archive)
    model = output / "model.tar.gz"
    return f"file://{model}" if model.is_file() else None


def run_job(run: LocalRun, plan: Plan) -> str | None:
    return run_v2(run, plan) if run.sdk == "2" else run_v3(run, plan)
