"""What an MPI launcher needs from the training image, checked before smdist's v3 driver waits.

For ``mpirun`` and ``smddp`` the first host waits up to ``HOST_WAIT_SECONDS`` for the other
hosts' ssh ports; an image without mpirun or sshd would be found out only after that wait.
``missing_prerequisites`` says within seconds what is missing and how to add it to the image;
``absent_optional`` names what ``program_argv`` uses where the image has it (``smddprun``,
``mpi4py``) but can do without.

Standard library only, Python 3.8 (``smdist.runtime.PYTHON_FLOOR``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from pathlib import Path
from typing import NamedTuple

MPI_LAUNCHERS = ("mpirun", "smddp")
SSHD = "/usr/sbin/sshd"
SSH_PORT = 22
OPEN_MPI_HINT = (
    "use a training image with Open MPI, e.g. a SageMaker PyTorch DLC, or install openmpi-bin"
)
SSHD_HINT = (
    "mpirun starts the other hosts' ranks over ssh: use a training image with an ssh server, "
    "e.g. a SageMaker PyTorch DLC, or install openssh-server"
)


class Missing(NamedTuple):
    """A prerequisite the image lacks: ``what`` (a word) and ``message`` (one line, with how to
    add it to the image)."""

    what: str
    message: str


def _listening(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def missing_prerequisites(
    launcher: str,
    *,
    first_host: bool,
    host_count: int,
    path: str | None = None,
    sshd: str = SSHD,
    ssh_port: int = SSH_PORT,
) -> list[Missing]:
    """What ``launcher`` needs from this host's image and does not find; empty when all is there.

    - ``mpirun`` on ``path`` (default: this process's PATH), on the first host, which runs it;
    - an ssh server on every host of a multi-host job: ``sshd`` exists (the driver starts it)
      or something already listens on ``ssh_port`` here.
    Other launchers need nothing of the image.
    """
    if launcher not in MPI_LAUNCHERS:
        return []
    if path is None:
        path = os.environ.get("PATH", os.defpath)
    missing = []
    if first_host and shutil.which("mpirun", path=path) is None:
        missing.append(
            Missing("mpirun", f"mpirun is not in this image (PATH={path}): {OPEN_MPI_HINT}")
        )
    if host_count > 1 and not Path(sshd).exists() and not _listening(ssh_port):
        missing.append(
            Missing(
                "sshd",
                f"no ssh server in this image ({sshd} is absent and nothing listens on port "
                f"{ssh_port}): {SSHD_HINT}",
            )
        )
    return missing


def absent_optional(launcher: str, path: str | None = None) -> list[str]:
    """For ``smddp``: which of ``smddprun`` (on ``path``) and ``mpi4py`` the image lacks."""
    if launcher != "smddp":
        return []
    if path is None:
        path = os.environ.get("PATH", os.defpath)
    absent = []
    if shutil.which("smddprun", path=path) is None:
        absent.append("smddprun")
    if importlib.util.find_spec("mpi4py") is None:
        absent.append("mpi4py")
    return absent
