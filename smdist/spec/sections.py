"""The sections of a job that are models of their own: code, inputs, checkpoint, spot, network
and KMS keys (``smdist.spec.job.JobSpec`` holds them)."""

import re
from pathlib import PurePosixPath
from typing import Literal, NamedTuple

from pydantic import Field, field_validator

from smdist.spec.api_shapes import (
    FILE_SYSTEM_TYPES,
    FILE_SYSTEM_URI,
    INSTANCE_GROUPS_LIMIT,
    KMS_KEY,
    MAX_RUN_LIMIT,
    SECURITY_GROUP,
    SUBNET,
    check_input_uri,
    check_s3_uri,
)
from smdist.spec.base import StrictModel


class Code(StrictModel):
    """The training code. Leave ``entry_point`` and ``source_dir`` out to use the ready script."""

    framework: Literal["pytorch", "tensorflow"] | None = Field(
        None, description="framework of the script and container; default: the strategy's"
    )
    entry_point: str | None = Field(None, description="script run on every host, in source_dir")
    source_dir: str | None = Field(None, description="directory uploaded with the script")
    framework_version: str | None = Field(None, description="e.g. 2.3.0 (PyTorch) or 2.14 (TF)")
    py_version: str | None = Field(None, pattern=r"^py3\d{0,2}$", description="e.g. py311")
    image_uri: str | None = Field(None, description="a training image instead of the SDK's DLC")

    @field_validator("entry_point")
    @classmethod
    def _not_a_notebook(cls, value: str | None) -> str | None:
        # SageMaker's toolkit runs `python train.ipynb`: the notebook's JSON is a valid Python
        # expression, so the job "completes" having trained nothing. Refused before any cost.
        if value is not None and value.lower().endswith(".ipynb"):
            script = str(PurePosixPath(value).with_suffix(".py"))
            raise ValueError(
                f"{value!r} is a Jupyter notebook: the entry point is run with `python`, which "
                "reads a notebook's JSON as one Python expression and trains nothing; export it "
                f"as a script with `jupyter nbconvert --to script {value}` (it writes {script}) "
                f"and set code.entry_point: {script}"
            )
        return value

    @field_validator("framework_version")
    @classmethod
    def _version_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d+\.\d+(\.\d+)?", value):
            raise ValueError(f"{value!r} is not a version such as 2.3 or 2.3.0")
        return value


class Input(StrictModel):
    """One input channel: where the data is and how it is spread over the hosts."""

    uri: str = Field(
        description="s3://bucket/prefix, file:///local/dir, fsx://<file-system-id>/<mount "
        "name>/<path> (FSx for Lustre) or efs://<file-system-id>/<path> (EFS)"
    )
    distribution: Literal["FullyReplicated", "ShardedByS3Key"] = "FullyReplicated"
    input_mode: Literal["File", "FastFile", "Pipe"] | None = None
    access_mode: Literal["ro", "rw"] | None = Field(
        None, description="a file system's access: ro (default) or rw"
    )
    instance_groups: list[str] = Field(
        [],
        max_length=INSTANCE_GROUPS_LIMIT,
        description="the instance groups whose hosts get this channel (heterogeneous clusters)",
    )

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str) -> str:
        return check_input_uri(value)

    @property
    def file_system(self) -> "FileSystem | None":
        """The file system this channel mounts, or None for S3 and local directories."""
        match = FILE_SYSTEM_URI.match(self.uri)
        if match is None:
            return None
        return FileSystem(
            type=FILE_SYSTEM_TYPES[match["scheme"]],
            id=match["id"],
            directory_path=match["path"] or "/",
            access_mode=self.access_mode or "ro",
        )


class FileSystem(NamedTuple):
    """A channel's ``FileSystemDataSource``, as the request states it."""

    type: str  # FSxLustre or EFS
    id: str
    directory_path: str
    access_mode: str


class Checkpoint(StrictModel):
    """Where checkpoints persist between runs (SageMaker syncs local_path to s3_uri)."""

    s3_uri: str | None = None
    local_path: str = "/opt/ml/checkpoints"

    @field_validator("s3_uri")
    @classmethod
    def _s3(cls, value: str | None) -> str | None:
        return None if value is None else check_s3_uri(value)


class Spot(StrictModel):
    """Managed spot training: cheaper, may be interrupted (resume needs checkpoints)."""

    enabled: bool = False
    max_wait: int | None = Field(None, ge=1, le=MAX_RUN_LIMIT, description="seconds, >= max_run")


class Network(StrictModel):
    subnets: list[str] = Field([])
    security_group_ids: list[str] = Field([])
    isolation: bool = Field(False, description="EnableNetworkIsolation")
    encrypt_inter_container_traffic: bool = False

    @field_validator("subnets")
    @classmethod
    def _subnets(cls, values: list[str]) -> list[str]:
        for value in values:
            if not SUBNET.match(value):
                raise ValueError(f"{value!r} is not a subnet id such as subnet-0123456789abcdef0")
        return values

    @field_validator("security_group_ids")
    @classmethod
    def _groups(cls, values: list[str]) -> list[str]:
        for value in values:
            if not SECURITY_GROUP.match(value):
                raise ValueError(
                    f"{value!r} is not a security group id such as sg-0123456789abcdef0"
                )
        return values


class Kms(StrictModel):
    volume_key_id: str | None = None
    output_key_id: str | None = None

    @field_validator("volume_key_id", "output_key_id")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        if value is not None and not KMS_KEY.match(value):
            raise ValueError(f"{value!r} is not a KMS key id, key ARN or alias/NAME")
        return value
