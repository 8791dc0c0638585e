"""The options of the SageMaker backends (``smdist submit``'s flags, ``fit(options=...)``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, StrictBool

from smdist.backends.options import PYTHON_ONLY, BackendOptions, PollSeconds, Region

DEFAULT_POLL_SECONDS = 10.0
DEFAULT_LOCAL_MODE_POLL_SECONDS = 0.2

Bucket = Annotated[str | None, Field(description="S3 bucket for the code (default: the SDK's)")]
Role = Annotated[str | None, Field(description="IAM role ARN when the job file has none")]
BotoSession = Annotated[Any, Field(description="a boto3.Session to send with"), PYTHON_ONLY]


class SageMakerOptions(BackendOptions):
    """Real SageMaker training jobs, sent as the installed SDK line sends them."""

    bucket: Bucket = None
    role: Role = None
    region: Region = None
    boto_session: BotoSession = None
    poll_seconds: PollSeconds = DEFAULT_POLL_SECONDS


class LocalModeOptions(BackendOptions):
    """SageMaker's own containers on this machine (the SDK's local mode, Docker)."""

    pass_aws_credentials: Annotated[
        StrictBool,
        Field(description="let the SDK write AWS credentials into its compose file"),
        PYTHON_ONLY,
    ] = False
    region: Region = None
    boto_session: BotoSession = None
    bucket: Bucket = None
    output_dir: Annotated[
        str | None,
        Field(description="where model.tar.gz goes (default: the job's output/)"),
        PYTHON_ONLY,
    ] = None
    role: Role = None
    root: Annotated[Path, Field(description="where local jobs are kept")] = Path(".smdist")
    grace: Annotated[
        float, Field(gt=0, description="seconds from a stop to SIGKILL"), PYTHON_ONLY
    ] = 30.0
    container_config: Annotated[
        dict[str, Any] | None,
        Field(description="Compose service settings for every container"),
        PYTHON_ONLY,
    ] = None
    shm_size: Annotated[
        str | None, Field(description="/dev/shm size of each container, e.g. 2gb")
    ] = None
    poll_seconds: PollSeconds = DEFAULT_LOCAL_MODE_POLL_SECONDS
