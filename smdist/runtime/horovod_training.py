"""Checks shared by the Horovod entry points (PyTorch and TensorFlow).

Horovod learns its peers from its launcher: ``horovodrun`` (Gloo or MPI) or a bare ``mpirun``,
which is how SageMaker starts Horovod jobs (distribution ``{"mpi": {"enabled": True}}``). A
Horovod built without MPI that is started by a bare ``mpirun`` does not fail: every process
initialises as a world of one and trains alone, and the job "succeeds" N times over. The check
here turns that into an error that says what to do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# What each launcher tells its processes about the size of the world.
_LAUNCHER_SIZE_VARIABLES = (
    ("HOROVOD_SIZE", "horovodrun"),
    ("OMPI_COMM_WORLD_SIZE", "mpirun (Open MPI)"),
    ("PMI_SIZE", "mpirun (MPICH / Intel MPI)"),
)


class HorovodWorldMismatch(RuntimeError):
    """Horovod initialised with fewer processes than the launcher started."""


def launcher_world_size(environ: Mapping[str, str] = os.environ) -> tuple[int, str] | None:
    """(size, launcher) as the launcher announced it; None when no launcher variable is set."""
    for variable, launcher in _LAUNCHER_SIZE_VARIABLES:
        value = environ.get(variable, "").strip()
        if value.isdigit():
            return int(value), launcher
    return None


def check_world_size(
    horovod_size: int, mpi_built: bool, environ: Mapping[str, str] = os.environ
) -> None:
    """Fail when Horovod's world is smaller than the one the launcher started."""
    announced = launcher_world_size(environ)
    if announced is None or announced[0] == horovod_size:
        return
    size, launcher = announced
    hint = (
        "this Horovod was built without MPI, so it cannot join processes started by mpirun: "
        "launch with `horovodrun --gloo`, or install a Horovod built with HOROVOD_WITH_MPI=1"
        if not mpi_built
        else "check that every process runs the same Horovod and reaches the others"
    )
    raise HorovodWorldMismatch(
        f"{launcher} started {size} processes but Horovod sees a world of {horovod_size}: {hint}"
    )


def apply_collective_timeout(seconds: int, environ: dict[str, str] | None = None) -> None:
    """Bound how long Horovod waits for a rank that stopped taking part (0: Horovod's default).

    Horovod's stall inspector notices a collective that some ranks never join; with a shutdown
    time set it ends the job instead of waiting forever. Must run before ``hvd.init()``.
    Variables the user set already are left alone.
    """
    if seconds < 0:
        raise ValueError(
            f"SMDIST_COLLECTIVE_TIMEOUT={seconds} must be >= 0 (seconds; 0 keeps Horovod's "
            "default of waiting forever)"
        )
    if seconds == 0:
        return
    target = os.environ if environ is None else environ
    target.setdefault("HOROVOD_STALL_CHECK_TIME_SECONDS", str(max(1, min(60, seconds // 2))))
    target.setdefault("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", str(seconds))
    target.setdefault("HOROVOD_GLOO_TIMEOUT_SECONDS", str(seconds))
