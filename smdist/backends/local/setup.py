"""Setting up a local job: its options, and what this machine and the plan must offer first.

Everything here runs before any process starts, so every problem it finds is one the user fixes
before the job can run (a ``SetupError``: exit code 2 on the command line).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from smdist.backends.local.layout import LocalLayout
from smdist.backends.local.requirements import missing_requirements
from smdist.errors import OPTION, Problem, SetupError, SpecError

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

DEFAULT_ROOT = Path(".smdist")
DEFAULT_GRACE = 30.0
DEFAULT_STALL_TIMEOUT = 600.0
SAGEMAKER_BASE = PurePosixPath("/opt/ml")


class PrepareError(SetupError, RuntimeError):
    """The job could not be set up on this machine (a missing tool, unreadable input): exit 2."""


@dataclass(frozen=True)
class LocalOptions:
    """The local backend's options (``smdist.fit(..., options={...})``, ``smdist run`` flags):

    - ``hosts``: emulated hosts (default: the cluster's ``instance_count``);
    - ``processes_per_host``: training processes per host (default: the strategy's, capped by
      what this machine holds);
    - ``root``: where jobs, checkpoints and downloads live (default ``.smdist``);
    - ``grace``: seconds between SIGTERM and SIGKILL when stopping (default 30; SageMaker: 120);
    - ``stall_timeout``: fail the job when no process prints for this long (default 600; None:
      never);
    - ``max_run``: seconds before the job is stopped (default: the spec's ``max_run``);
    - ``use_gpus``: False runs on CPU even where GPUs exist;
    - ``python``: the interpreter for the training processes (default: this one);
    - ``job_name``: instead of ``<spec name>-<time>-<random>``;
    - ``console``: a ``rich.console.Console`` for ``wait(logs=True)``;
    - ``fresh``: True starts without the checkpoints kept from earlier runs (with
      ``checkpoint.s3_uri``); they stay in the store until this job has written its own, and
      are then moved aside (``<root>/checkpoints/<name>.before-<job>``), never deleted;
    - ``namespaces``: each host in Linux namespaces of its own (``/opt/ml`` at its real path,
      hostname ``algo-K``, its own network and ports); None (default): where this machine can
      make them; False: the hosts share this machine's files and network; True: refuse to run
      without them.
    """

    hosts: int | None = None
    processes_per_host: int | None = None
    root: Path = DEFAULT_ROOT
    grace: float = DEFAULT_GRACE
    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT
    max_run: float | None = None
    use_gpus: bool | None = None
    python: str | None = None
    job_name: str | None = None
    console: Any = None
    fresh: bool = False
    namespaces: bool | None = None

    @classmethod
    def from_keywords(cls, options: dict[str, Any]) -> LocalOptions:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise SpecError(
                [
                    Problem(
                        f"options.{name}",
                        "is not an option of the local backend",
                        None,
                        ", ".join(sorted(known)),
                    )
                    for name in unknown
                ],
                OPTION,
            )
        # None means "the default", except for stall_timeout, where it means "never".
        values = {k: v for k, v in options.items() if v is not None or k == "stall_timeout"}
        if "root" in values:
            values["root"] = Path(values["root"])
        for name in ("grace", "stall_timeout", "max_run"):
            value = values.get(name)
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                raise SpecError(
                    [Problem(f"options.{name}", "must be a positive number of seconds", value)]
                )
        for name, valid in (("fresh", "True or False"), ("namespaces", "True, False or None")):
            if not isinstance(values.get(name, False), bool):
                raise SpecError(
                    [Problem(f"options.{name}", "must be a boolean", values[name], valid)]
                )
        return cls(**values)


def job_region(plan: Plan) -> str:
    return (
        plan.spec.region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or "us-east-1"
    )


def checkpoint_path(plan: Plan) -> tuple[str, str | None]:
    """The host-relative checkpoint directory for checkpoint.local_path, and a note."""
    checkpoint = plan.spec.checkpoint
    if checkpoint is None:
        return "checkpoints", None
    local = PurePosixPath(checkpoint.local_path)
    try:
        relative = local.relative_to(SAGEMAKER_BASE)
    except ValueError:
        return "checkpoints", (
            f"checkpoint.local_path {checkpoint.local_path} is outside /opt/ml; each host's "
            "checkpoints/ directory stands for it"
        )
    return str(relative) or "checkpoints", None


def check_tools(plan: Plan, layout: LocalLayout, python: str) -> None:
    """mpirun where the distribution needs it, and the packages the job's Python must have."""
    if layout.launcher.uses_mpi and shutil.which("mpirun") is None:
        raise PrepareError(
            "this distribution starts with mpirun, which is not installed here: install Open "
            "MPI (Debian/Ubuntu: apt-get install openmpi-bin)"
        )
    try:
        missing = missing_requirements(plan, layout, python)
    except SetupError as error:
        raise PrepareError(str(error)) from None
    if missing:
        raise PrepareError("; ".join(missing))


def prepare_notes(plan: Plan, layout: LocalLayout, address_names: list[str] | None) -> list[str]:
    """What differs from SageMaker in this run, one line each."""
    lines = [f"warning: {warning}" for warning in plan.warnings]
    lines += [f"note: {note}" for note in layout.notes]
    if address_names:
        lines.append(
            "note: libnss_wrapper is not available, so the hosts are named by their addresses "
            f"({', '.join(address_names)}) instead of algo-1, algo-2, ...; install "
            "libnss-wrapper for SageMaker's names"
        )
    if plan.source_dir and Path(plan.source_dir, "requirements.txt").is_file():
        # Nothing here installs it: the hosts run the job's Python as it is. On SageMaker the
        # container pip-installs a shipped requirements.txt before the script (SDK v2's toolkit
        # by itself; under SDK v3 because smdist names it in SourceCode.requirements).
        lines.append(
            "note: this local run does not install requirements.txt: its packages must already "
            "be installed for the Python that runs the job (on SageMaker the container "
            "pip-installs it before the script starts, when it ships with the code)"
        )
    return lines
