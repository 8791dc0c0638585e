"""What a long job sets beside its code and instances: retries on AWS-side failures, checks
and a shell for its hosts, and where its progress is followed (TensorBoard, MLflow).

Each becomes one CreateTrainingJob field: ``RetryStrategy``, ``InfraCheckConfig``,
``RemoteDebugConfig``, ``TensorBoardOutputConfig``, ``MlflowConfig``.
"""

from pydantic import Field, field_validator

from smdist.spec.api_shapes import (
    MLFLOW_ARN,
    MLFLOW_NAME_LIMIT,
    RETRY_ATTEMPTS_LIMIT,
    check_s3_uri,
)
from smdist.spec.base import StrictModel

TENSORBOARD_LOCAL_PATH = "/opt/ml/output/tensorboard"


class Retry(StrictModel):
    """Retries of a job that fails for an internal or capacity reason (not the script's)."""

    max_attempts: int = Field(
        ge=1,
        le=RETRY_ATTEMPTS_LIMIT,
        description=f"MaximumRetryAttempts, 1 to {RETRY_ATTEMPTS_LIMIT}",
    )


class TensorBoard(StrictModel):
    """SageMaker uploads ``local_path`` on every host to ``s3_uri`` while the job runs."""

    s3_uri: str | None = Field(
        None, description="where the logs go; default s3://<bucket>/<job name>/tensorboard"
    )
    local_path: str = Field(TENSORBOARD_LOCAL_PATH, description="the directory the script writes")

    @field_validator("s3_uri")
    @classmethod
    def _s3(cls, value: str | None) -> str | None:
        return None if value is None else check_s3_uri(value)

    @field_validator("local_path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"{value!r} is not an absolute path such as {TENSORBOARD_LOCAL_PATH}")
        return value


class Mlflow(StrictModel):
    """SageMaker's managed MLflow: the tracking server (or app) the job logs to."""

    tracking_server_arn: str = Field(description="MlflowResourceArn")
    experiment: str | None = Field(None, min_length=1, max_length=MLFLOW_NAME_LIMIT)
    run_name: str | None = Field(None, min_length=1, max_length=MLFLOW_NAME_LIMIT)

    @field_validator("tracking_server_arn")
    @classmethod
    def _arn(cls, value: str) -> str:
        if not MLFLOW_ARN.match(value):
            raise ValueError(
                f"{value!r} is not an MLflow tracking server ARN such as "
                "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/my-server"
            )
        return value
