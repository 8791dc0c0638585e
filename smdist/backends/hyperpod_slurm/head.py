"""Where Slurm's commands run and the job folder is written: this machine (a login or head node
of the cluster), or a head node over ssh.

Every command is an argv list. Over ssh the remote shell needs one command line: it is the
argv joined with ``shlex.join``, each word quoted, never a value spliced into a line. Files
reach a remote job folder as one tar stream (``tar -x`` there), and are read back with
``tail -c +N`` from an offset, so a log is followed without copying it again.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError

SSH = ("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=20")
SSH_FAILED = 255  # ssh's own exit status: it could not reach the head node
# A file for the job folder: its content (bytes) or a file of this machine, and its mode.
Content = bytes | Path


@dataclass(frozen=True)
class Head:
    """This machine (``destination`` None), or the head node ssh reaches as ``destination``."""

    destination: str | None = None

    @property
    def field(self) -> str:
        return "--head-node"

    @property
    def where(self) -> str:
        return self.destination or "this machine"

    def argv(self, command: Sequence[str]) -> list[str]:
        if self.destination is None:
            return list(command)
        return [*SSH, "--", self.destination, shlex.join(command)]

    def run(
        self, command: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> subprocess.CompletedProcess:
        """``command`` run here or on the head node; SpecError (exit 2) when it cannot start
        there at all (no such program here, ssh cannot connect)."""
        argv = self.argv(command)
        try:
            done = subprocess.run(
                argv, input=stdin, capture_output=True, timeout=timeout, check=False
            )
        except FileNotFoundError:
            raise self.unreachable(f"{argv[0]} is not installed on this machine") from None
        except subprocess.TimeoutExpired:
            why = f"`{shlex.join(command)}` gave no answer in {timeout:g} s"
            raise self.unreachable(why) from None
        if self.destination is not None and done.returncode == SSH_FAILED:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise self.unreachable(f"ssh could not run a command there: {said[-1] if said else ''}")
        return done

    def unreachable(self, why: str) -> SpecError:
        valid = "the ssh destination of the cluster's head node, which sbatch runs on"
        if self.destination is None:
            valid = "run on the cluster's head or login node, or give " + valid
        problem = Problem(self.field, f"cannot reach Slurm: {why}", self.destination, valid)
        return SpecError([problem], CANNOT_RUN_HERE)

    # ---- the job folder ----------------------------------------------------------------------
    def make_folders(self, folders: Sequence[PurePosixPath]) -> None:
        if self.destination is None:
            for folder in folders:
                Path(folder).mkdir(parents=True, exist_ok=True)
            return
        self.checked(["mkdir", "-p", "--", *map(str, folders)], "make the job folder")

    def write_files(self, folder: PurePosixPath, files: dict[str, Content]) -> None:
        """Each ``relative path -> content`` under ``folder`` (made already)."""
        if self.destination is None:
            for relative, content in files.items():
                target = Path(folder) / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, Path):
                    shutil.copyfile(content, target)
                    shutil.copymode(content, target)
                else:
                    target.write_bytes(content)
            return
        with tempfile.TemporaryFile() as stream:
            with tarfile.open(fileobj=stream, mode="w") as archive:
                for relative, content in files.items():
                    _add(archive, relative, content)
            stream.seek(0)
            tar = ["tar", "-x", "-f", "-", "-C", str(folder)]
            self.checked(tar, "write the job folder", stdin=stream.read())

    def read_bytes(self, path: PurePosixPath, offset: int = 0) -> bytes | None:
        """The file's bytes from ``offset``; None when there is no such file."""
        if self.destination is None:
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    return handle.read()
            except FileNotFoundError:
                return None
        done = self.run(["tail", "-c", f"+{offset + 1}", "--", str(path)])
        return done.stdout if done.returncode == 0 else None

    def read_tail(self, path: PurePosixPath, size: int) -> bytes | None:
        """The file's last ``size`` bytes; None when there is no such file."""
        if self.destination is None:
            try:
                with open(path, "rb") as handle:
                    handle.seek(max(0, os.fstat(handle.fileno()).st_size - size))
                    return handle.read()
            except FileNotFoundError:
                return None
        done = self.run(["tail", "-c", str(size), "--", str(path)])
        return done.stdout if done.returncode == 0 else None

    def touch(self, path: PurePosixPath) -> None:
        if self.destination is None:
            Path(path).touch()
        else:
            self.checked(["touch", "--", str(path)], "write to the job folder")

    def checked(self, command: Sequence[str], what: str, stdin: bytes | None = None) -> bytes:
        done = self.run(command, stdin=stdin, timeout=600.0)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()
            raise self.unreachable(f"could not {what} ({shlex.join(command[:3])}...): {said}")
        return done.stdout


def _add(archive: tarfile.TarFile, relative: str, content: Content) -> None:
    if isinstance(content, Path):
        info = archive.gettarinfo(str(content), arcname=relative)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        with open(content, "rb") as handle:
            archive.addfile(info, handle)
        return
    info = tarfile.TarInfo(relative)
    info.size, info.mode = len(content), 0o644
    archive.addfile(info, io.BytesIO(content))


def on_path(program: str) -> bool:
    """Whether ``program`` is on this machine's PATH."""
    return shutil.which(program, path=os.environ.get("PATH")) is not None
