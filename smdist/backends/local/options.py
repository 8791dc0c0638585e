"""The local backend's options (``smdist.fit(..., options={...})``, ``smdist run``'s flags):
one model, from which the flags, their ``--help`` and the checks all come."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, StrictBool, field_validator

from smdist.backends.options import PYTHON_ONLY, BackendOptions, Flag, JobName

DEFAULT_ROOT = Path(".smdist")
DEFAULT_GRACE = 30.0
DEFAULT_STALL_TIMEOUT = 600.0

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Hosts = Annotated[
    int | None, Field(ge=1, description="emulated hosts (default: the cluster's instance_count)")
]
ProcessesPerHost = Annotated[
    int | None,
    Field(ge=1, description="training processes per host (default: the strategy's, capped by "
          "what this machine holds)"),
]  # fmt: skip
# CreateTrainingJob's FileSystemId: fs- and 8 to 17 hexadecimal digits (11 to 21 characters).
FILE_SYSTEM_ID = re.compile(r"\Afs-[0-9a-f]{8,17}\Z")
FileSystems = Annotated[
    # A list of ID=DIR on the command line (each --file-system), a dict in Python; always a
    # dict once read.
    list[str] | dict[str, Path],
    Field(description="a directory of this machine standing for a file system, ID=DIR "
          "(repeatable): DIR is what a client mounting the file system sees, an FSx for Lustre "
          "file system's mount name (mount -t lustre ...@tcp:/<mount name> DIR) or an EFS file "
          "system's root, so channel fsx://ID/<mount name>/<path> or efs://ID/<path> reads "
          "DIR/<path>, read-only unless its access_mode is rw; default: none"),
    Flag(names="--file-system"),
]  # fmt: skip


class LocalOptions(BackendOptions):
    """Emulated SageMaker hosts on this machine, no Docker."""

    none_is_a_value: ClassVar[frozenset[str]] = frozenset({"stall_timeout"})

    hosts: Hosts = None
    processes_per_host: ProcessesPerHost = None
    root: Annotated[
        Path, Field(description="where jobs, logs and checkpoints are kept"), Flag(names="--root")
    ] = DEFAULT_ROOT
    grace: Annotated[
        Seconds, Field(description="seconds from SIGTERM to SIGKILL when stopping (SageMaker: 120)")
    ] = DEFAULT_GRACE
    stall_timeout: Annotated[
        Seconds | None,
        Field(description="fail when no process prints for this many seconds (0 or None: never)"),
    ] = DEFAULT_STALL_TIMEOUT
    max_run: Annotated[
        Seconds | None, Field(description="seconds before the job is stopped (default: the spec's)")
    ] = None
    use_gpus: Annotated[
        StrictBool | None,
        Field(description="--cpu: run on CPU even where GPUs exist"),
        Flag(names="--use-gpus/--cpu"),
    ] = None
    python: Annotated[
        str | None,
        Field(description="the interpreter for the training processes (default: this one)"),
        PYTHON_ONLY,
    ] = None
    job_name: JobName = None
    console: Annotated[
        Any, Field(description="a rich.console.Console for wait(logs=True)"), PYTHON_ONLY
    ] = None
    fresh: Annotated[
        StrictBool,
        Field(description="start without the checkpoints earlier runs kept (they are moved "
              "aside, not deleted, once this job has written its own)"),
    ] = False  # fmt: skip
    file_systems: FileSystems = {}
    instance_type: Annotated[
        str | None,
        Field(description="the instance type the hosts emulate: one of the job's "
              "cluster.instance_preferences (default: the first; SageMaker starts the job on "
              "the first with capacity), or, without preferences, a type emulated instead of "
              "cluster.instance_type (its instance_count kept)"),
    ] = None  # fmt: skip
    namespaces: Annotated[
        StrictBool | None,
        Field(description="each host in Linux namespaces of its own: /opt/ml at its real path, "
              "its own hostname, network and ports (default: where this machine can make "
              "them); --no-namespaces shares this machine's files and network"),
    ] = None  # fmt: skip

    @field_validator("stall_timeout", mode="before")
    @classmethod
    def _zero_is_never(cls, value: Any) -> Any:
        return None if value == 0 and not isinstance(value, bool) else value

    @field_validator("file_systems", mode="before")
    @classmethod
    def _file_systems(cls, value: Any) -> Any:
        """ID=DIR texts (the command line's) as a dict; every ID and DIR checked."""
        if isinstance(value, (list, tuple)):
            pairs = []
            for text in value:
                identifier, equals, directory = str(text).partition("=")
                if not equals:
                    raise ValueError(f"{text!r} is not FILE_SYSTEM_ID=DIRECTORY")
                pairs.append((identifier.strip(), directory.strip()))
            value = dict(pairs)
        if not isinstance(value, dict):
            raise ValueError(
                f"{value!r} is neither ID=DIR texts nor a dict {{file system id: directory}}"
            )
        for identifier, directory in value.items():
            if not isinstance(identifier, str) or not FILE_SYSTEM_ID.match(identifier):
                raise ValueError(
                    f"{identifier!r} is not a file system id such as fs-0123456789abcdef0"
                )
            if not isinstance(directory, (str, Path)) or not str(directory):
                raise ValueError(f"{identifier} names no directory; expected {identifier}=DIR")
        return {identifier: Path(directory) for identifier, directory in value.items()}

    @field_validator("root", mode="after")
    @classmethod
    def _as_path(cls, value: Path) -> Path:
        return Path(value)


class LocalTuneOptions(BackendOptions):
    """A search on this machine: each trial a local job."""

    root: Annotated[Path, Field(description="where jobs, studies and checkpoints are kept")] = (
        DEFAULT_ROOT
    )
    hosts: Hosts = None
    processes_per_host: ProcessesPerHost = None
    parallel: Annotated[
        int | None,
        Field(ge=1, description="trials at a time (default: the spec's max_parallel_jobs, "
              "capped so that this machine has a CPU for every process)"),
    ] = None  # fmt: skip
    fresh: Annotated[
        StrictBool,
        Field(description="start the search over (the earlier study is set aside, not deleted)"),
    ] = False
    on_trial: Annotated[
        Any, Field(description="called whenever a trial starts or ends"), PYTHON_ONLY
    ] = None
