"""smdist's ``ModelTrainer``: v3's own, sending what smdist's requests carry and ModelTrainer 3.27
has no setting for.

- on every job: the profiler off and metric time series on (``v3_request.EVERY_JOB_*``);
- the job's ``MlflowConfig`` (``with_mlflow_config``): TrainingJob.create takes one, ModelTrainer
  never passes it;
- TensorBoard's logs under the job's own name when the job names no ``tensorboard.s3_uri``
  (``with_tensorboard_under_job_name``), as smdist's request puts them
  (``job_settings.tensorboard_uri``): v3's default is the base job name, shared by every job.

The class is built on first use: this module imports with SDK v2 installed.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker.job_settings import TENSORBOARD_PREFIX
from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.backends.sagemaker.v3.session import require_sdk_v3

_TRAINER_CLASS: Any = None


def _tensorboard_uri(bucket: str, job_name: str) -> str:
    return f"s3://{bucket}/{job_name}/{TENSORBOARD_PREFIX}"  # job_settings.tensorboard_uri's


def _boto3_form(request: dict[str, Any], mlflow: Any, tensorboard_bucket: str | None) -> None:
    """The settings in boto3's form (PascalCase): what pipelines and AWS Batch queues get."""
    from sagemaker.core.utils.utils import serialize

    request["AlgorithmSpecification"] = {
        **request["AlgorithmSpecification"],
        **v3_request.EVERY_JOB_ALGORITHM,
    }
    request.update(v3_request.EVERY_JOB_REQUEST)
    if mlflow is not None:
        request["MlflowConfig"] = serialize(mlflow)
    tensorboard, name = request.get("TensorBoardOutputConfig"), request.get("TrainingJobName")
    if tensorboard_bucket and tensorboard and name:  # a pipeline's request has no name
        request["TensorBoardOutputConfig"] = {
            **tensorboard,
            "S3OutputPath": _tensorboard_uri(tensorboard_bucket, name),
        }


def with_every_job_settings(
    request: dict[str, Any], mlflow: Any = None, tensorboard_bucket: str | None = None
) -> dict[str, Any]:
    """``request`` (what ``ModelTrainer._create_training_job_args`` returns, either form) with
    what smdist sets on every job and ModelTrainer has no setting for: the profiler off and
    metric time series on (``v3_request.EVERY_JOB_*``); with ``mlflow`` (a v3 ``MlflowConfig``)
    the job's MLflow tracking; with ``tensorboard_bucket`` TensorBoard's logs under the job's
    name in that bucket."""
    if "AlgorithmSpecification" in request:
        _boto3_form(request, mlflow, tensorboard_bucket)
        return request
    from sagemaker.core.shapes import ProfilerConfig

    algorithm = request.get("algorithm_specification")
    if algorithm is not None:
        algorithm.enable_sage_maker_metrics_time_series = True
    request["profiler_config"] = ProfilerConfig(disable_profiler=True)
    if mlflow is not None:
        request["mlflow_config"] = mlflow
    tensorboard, name = request.get("tensor_board_output_config"), request.get("training_job_name")
    if tensorboard_bucket and tensorboard is not None and name:
        # A copy: v3 keeps its config object across train() calls.
        request["tensor_board_output_config"] = type(tensorboard)(
            s3_output_path=_tensorboard_uri(tensorboard_bucket, name),
            local_path=tensorboard.local_path,
        )
    return request


def trainer_class() -> Any:
    """v3's ``ModelTrainer``, sending what smdist sets (``with_every_job_settings``) in the
    request ``train()`` builds; otherwise unchanged (a subclass, built on first use)."""
    global _TRAINER_CLASS
    if _TRAINER_CLASS is None:
        require_sdk_v3()
        from pydantic import PrivateAttr
        from sagemaker.train import ModelTrainer

        class SmdistModelTrainer(ModelTrainer):
            """ModelTrainer whose request carries ProfilerConfig(DisableProfiler=True),
            EnableSageMakerMetricsTimeSeries=True and the job's MlflowConfig, as smdist's own
            requests do."""

            _mlflow_config: Any = PrivateAttr(default=None)
            _tensorboard_bucket: str | None = PrivateAttr(default=None)

            def with_mlflow_config(self, mlflow_config: Any) -> SmdistModelTrainer:
                """Log the job to SageMaker managed MLflow (a ``sagemaker.core.shapes.
                MlflowConfig``: the tracking server or app ARN, experiment, run name)."""
                self._mlflow_config = mlflow_config
                return self

            def with_tensorboard_under_job_name(self, bucket: str) -> SmdistModelTrainer:
                """TensorBoard's logs to ``s3://<bucket>/<job name>/tensorboard`` (with a
                ``with_tensorboard_output_config``), one prefix per job."""
                self._tensorboard_bucket = bucket
                return self

            def _create_training_job_args(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
                return with_every_job_settings(
                    super()._create_training_job_args(*args, **kwargs),
                    self._mlflow_config,
                    self._tensorboard_bucket,
                )

        _TRAINER_CLASS = SmdistModelTrainer
    return _TRAINER_CLASS
