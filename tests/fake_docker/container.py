"""The inside of a fake Docker container: ``python -I container.py SPEC.json``.

``compose.py`` starts each container as ``unshare --mount --uts --net --propagation private --
python -I container.py SPEC.json``; here, in those fresh namespaces, the container is laid out
as Docker would and the service's command exec'd (this process becomes it):

- an empty ``/opt/ml`` of the container's own (the image's), when a volume goes under it: a
  tmpfs over this machine's, or, where this machine has none, the overlay of
  local backend's ``hosts/namespaced/enter.py`` (a mount point without hiding anything of ``/opt``);
- every volume bind-mounted, shallowest target first, read-only ones remounted so; a missing
  mount point is made (under ``/opt/ml`` or inside another volume only: nothing is created on
  this machine's own directories);
- the container's ``/etc/hosts`` (and ``/etc/hostname``) bind-mounted; the hostname set;
- the working directory; then, once ``compose.py`` has cabled ``eth0``, the command, with the
  service's environment and nothing else.

It dies with the fake Compose that started it (``PR_SET_PDEATHSIG``, kept across the exec), so
a killed Compose leaves no container running. Standard library only, plus the helpers of the
local backend's ``hosts/namespaced/enter.py``.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys
from pathlib import Path

# The local backend's host entry (standard library only), as a file: no smdist import here.
NAMESPACED_HOSTS = Path(__file__).resolve().parents[2] / "smdist/backends/local/hosts/namespaced"
sys.path.insert(0, str(NAMESPACED_HOSTS))
import enter as namespace  # noqa: E402

PR_SET_PDEATHSIG = 1
EXEC_FAILED = 127  # as Docker reports a command it cannot run


def _die_with(parent: int) -> None:
    """SIGKILL this process (and so the command it becomes) when the fake Compose dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # it died before the request took effect
        raise SystemExit("fake docker: compose is gone")


def _under(path: Path, bases: list[Path]) -> bool:
    return any(base == path or base in path.parents for base in bases)


def _make_mount_point(target: Path, directory: bool, creatable: list[Path]) -> None:
    if target.exists():
        return
    if not _under(target, creatable):
        raise SystemExit(
            f"fake docker: no mount point {target} on this machine: only paths under "
            f"{namespace.OPT_ML}, under another volume, or that exist can be volume targets"
        )
    if directory:
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()


def _mount_volumes(mounts: list[dict], scratch: Path) -> list[Path]:
    """Bind every volume; return the directories where mount points may be made."""
    opt_ml = namespace.OPT_ML
    creatable: list[Path] = []
    if any(_under(Path(mount["target"]), [opt_ml]) for mount in mounts):
        if opt_ml.is_dir():  # this machine's /opt/ml: hidden, as an image's own would be
            namespace.mount("tmpfs", str(opt_ml), "tmpfs")
        else:
            namespace.provide_opt_ml(scratch)
        creatable.append(opt_ml)
    # Shallowest first, as Docker sorts mounts: /opt/ml/output before /opt/ml/output/data.
    for mount in sorted(mounts, key=lambda mount: len(Path(mount["target"]).parts)):
        source, target = Path(mount["source"]), Path(mount["target"])
        _make_mount_point(target, source.is_dir(), creatable)
        namespace.bind(str(source), str(target), read_only=mount["readonly"])
        if source.is_dir():
            creatable.append(target)
    return creatable


def enter(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    _die_with(spec["parent"])
    creatable = _mount_volumes(spec["mounts"], Path(spec["scratch"]))
    namespace.bind(spec["hosts_file"], "/etc/hosts")
    if Path("/etc/hostname").is_file():
        namespace.bind(spec["hostname_file"], "/etc/hostname")
    socket.sethostname(spec["hostname"])
    workdir = Path(spec["workdir"])
    _make_mount_point(workdir, True, creatable)  # Docker makes a missing working directory
    os.chdir(workdir)
    namespace.await_file(Path(spec["network"]), "the container's network")  # cabled from outside
    argv, env = spec["argv"], spec["env"]
    try:
        os.execvpe(argv[0], argv, env)  # PATH lookup in the container's environment
    except OSError as exc:
        why = (
            "executable file not found in $PATH"
            if isinstance(exc, FileNotFoundError)
            else exc.strerror
        )
        print(f'exec: "{argv[0]}": {why}', file=sys.stderr, flush=True)
        raise SystemExit(EXEC_FAILED) from None


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: container.py SPEC.json")
    enter(sys.argv[1])
