"""The hyperpod-slurm backend's options (``smdist submit``'s flags, ``fit(options=...)``).

Every value that reaches the cluster is checked here first: a path that must be absolute on the
shared file system, a Slurm name made of the characters Slurm takes, an ssh destination that
ssh cannot read as one of its own options.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import Field, field_validator

from smdist.backends.options import BackendOptions, JobName, PollSeconds, Region
from smdist.contract.program import TORCHRUN_PORT

DEFAULT_JOB_ROOT = "/fsx/smdist"
DEFAULT_ROOT = Path(".smdist")
DEFAULT_GRACE = 30.0
DEFAULT_POLL_SECONDS = 5.0
# Slurm partition names: what sinfo shows (letters, digits, _ . -); several: comma-separated.
PARTITION = re.compile(r"\A[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*\Z")
# An ssh destination: [user@]host or ssh://[user@]host[:port]; never an option of ssh's own.
DESTINATION = re.compile(r"\A(ssh://)?([A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9._:\[\]-]*\Z")


def shared_path(value: str, what: str) -> str:
    """``value`` as an absolute POSIX path on the cluster; ValueError saying why not."""
    text = str(value)
    if not text.startswith("/"):
        raise ValueError(f"{what} must be an absolute path on the cluster, such as /fsx/...")
    if "%" in text or any(ord(char) < 32 for char in text):
        raise ValueError(
            f"{what} must hold no '%' (Slurm reads it as a file name pattern) and no control "
            "character"
        )
    return str(PurePosixPath(text))


class HyperPodSlurmOptions(BackendOptions):
    """An sbatch job on a SageMaker HyperPod Slurm cluster."""

    head_node: Annotated[
        str | None,
        Field(description="ssh destination ([user@]host) of the cluster's head or login node "
              "to submit through (default: this machine, where sbatch is)"),
    ] = None  # fmt: skip
    job_root: Annotated[
        str,
        Field(description="folder on the cluster's shared file system holding each job's "
              f"folder <job-root>/<job>: code, logs, model, checkpoints (default: "
              f"{DEFAULT_JOB_ROOT})"),
    ] = DEFAULT_JOB_ROOT  # fmt: skip
    partition: Annotated[
        str | None, Field(description="Slurm partition (default: the cluster's default one)")
    ] = None
    python: Annotated[
        str | None,
        Field(description="the Python each node runs the job with, e.g. a virtual "
              "environment's /fsx/envs/torch/bin/python (default: python3 on the nodes' PATH; "
              "python inside code.image_uri's container)"),
    ] = None  # fmt: skip
    processes_per_node: Annotated[
        int | None,
        Field(ge=1, description="training processes per node (default: the plan's: one per "
              "GPU of the instance type, 1 on a CPU type); a CPU cluster standing in for GPU "
              "instances needs it"),
    ] = None  # fmt: skip
    checkpoint_dir: Annotated[
        str | None,
        Field(description="shared folder the job checkpoints to and resumes from after a "
              "requeue or HyperPod's auto-resume (default: <job folder>/checkpoints)"),
    ] = None  # fmt: skip
    master_port: Annotated[
        int,
        Field(ge=1, le=65535, description="TCP port of the first node's rendezvous (default: "
              "the PyTorch container's MASTER_PORT)"),
    ] = TORCHRUN_PORT  # fmt: skip
    grace: Annotated[
        float,
        Field(gt=0, allow_inf_nan=False,
              description="seconds from SIGTERM to scancel when stopping"),
    ] = DEFAULT_GRACE  # fmt: skip
    root: Annotated[
        Path, Field(description="where this machine keeps its records of submitted jobs")
    ] = DEFAULT_ROOT
    region: Region = None
    poll_seconds: PollSeconds = DEFAULT_POLL_SECONDS
    job_name: JobName = None

    @field_validator("job_root")
    @classmethod
    def _job_root(cls, value: str) -> str:
        return shared_path(value, "the job root")

    @field_validator("checkpoint_dir")
    @classmethod
    def _checkpoint_dir(cls, value: str | None) -> str | None:
        return None if value is None else shared_path(value, "the checkpoint folder")

    @field_validator("partition")
    @classmethod
    def _partition(cls, value: str | None) -> str | None:
        if value is not None and not PARTITION.match(value):
            raise ValueError("a partition name is letters, digits, '_', '.' and '-'")
        return value

    @field_validator("head_node")
    @classmethod
    def _head_node(cls, value: str | None) -> str | None:
        if value is not None and not DESTINATION.match(value):
            raise ValueError("an ssh destination is [user@]host (it cannot start with '-')")
        return value

    @field_validator("python")
    @classmethod
    def _python(cls, value: str | None) -> str | None:
        if value is not None and (not value or value.startswith("-") or "\n" in value):
            raise ValueError("the python is a program name or path, such as /fsx/env/bin/python")
        return value

    @field_validator("root", mode="after")
    @classmethod
    def _as_path(cls, value: Any) -> Path:
        return Path(value)
