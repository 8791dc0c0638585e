"""The hyperparameters the SageMaker SDK sends besides the user's, from plain values.

``PlanValue.wire_hyperparameters`` (with placeholders) and ``submission.bind`` (with the job's
values) both compute them here, so binding derives nothing new.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smdist.contract.launch import Launch

LOG_LEVEL_INFO = 20  # sagemaker_container_log_level the SDK sends by default
CODE_CHANNEL = "code"
TARBALL = "sourcedir.tar.gz"
# With network isolation the container cannot reach S3: SageMaker mounts the code as a channel.
ISOLATED_SUBMIT_DIRECTORY = f"/opt/ml/input/data/{CODE_CHANNEL}/{TARBALL}"
CONTAINER_MODEL_DIR = "/opt/ml/model"


def sdk_hyperparameters(
    program: str, job_name: str, submit_directory: str, region: str
) -> dict[str, Any]:
    """What the SageMaker SDK adds to every job's hyperparameters (before JSON encoding)."""
    return {
        "sagemaker_submit_directory": submit_directory,
        "sagemaker_program": program,
        "sagemaker_container_log_level": LOG_LEVEL_INFO,
        "sagemaker_job_name": job_name,
        "sagemaker_region": region,
    }


def tf_model_dir(output_path: str | None, job_name: str, bucket: str, mpi: bool) -> str:
    """The TF estimator's ``model_dir``: ``<output_path or s3://bucket>/<job>/model``, or the
    container's model directory when MPI starts the ranks (Horovod, SMP v1)."""
    if mpi:
        return CONTAINER_MODEL_DIR
    base = output_path if (output_path or "").startswith("s3://") else None
    return f"{(base or f's3://{bucket}').rstrip('/')}/{job_name}/model"


def wire_values(
    hyperparameters: Mapping[str, Any],
    launch: Launch,
    framework: str,
    *,
    job_name: str,
    submit_directory: str,
    region: str,
    model_dir: str | None,
) -> dict[str, Any]:
    """SDK v2's hyperparameters before encoding: the user's, the SDK's own, the toolkit's from
    the launch, and TensorFlow's ``model_dir``."""
    values: dict[str, Any] = {
        **hyperparameters,
        **sdk_hyperparameters(launch.program, job_name, submit_directory, region),
        **launch.toolkit_hyperparameters,
    }
    if framework == "tensorflow":
        values["model_dir"] = model_dir
    return values


def submit_directory(isolated: bool, code_uri: str) -> str:
    """``sagemaker_submit_directory`` as the SDK sets it for a job whose code is at code_uri."""
    return ISOLATED_SUBMIT_DIRECTORY if isolated else code_uri
