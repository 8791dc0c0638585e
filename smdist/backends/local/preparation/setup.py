"""Setting up a local job: its options, and what this machine and the plan must offer first.

Everything here runs before any process starts, so every problem it finds is one the user fixes
before the job can run (a ``SetupError``: exit code 2 on the command line).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from smdist.backends.local.preparation.layout import LocalLayout
from smdist.backends.local.preparation.requirements import missing_requirements
from smdist.errors import SetupError

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

SAGEMAKER_BASE = PurePosixPath("/opt/ml")


class PrepareError(SetupError, RuntimeError):
    """The job could not be set up on this machine (a missing tool, unreadable input): exit 2."""


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
