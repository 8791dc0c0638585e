"""The first step inside an emulated host's fresh namespaces: make them host K's container,
then exec its command.

Usage: ``python -S -E enter.py FD`` (as ``host.start_host`` runs it, under ``unshare``): the
host's spec (JSON) comes through the inherited pipe FD, so its environment, which may hold the
user's credentials, is never written to disk.

- ``/opt/ml`` is the host's folder (bind mount). Where this machine has no ``/opt/ml``, a
  throw-away overlay on ``/opt`` provides the mount point in this mount namespace only, hiding
  nothing and writing nothing to the machine; the channels read in place (``views``) are
  their sources, read-only, at their folders under ``/opt/ml/input/data``;
- ``/etc/hosts`` names every host of the job; it, ``/etc/resolv.conf`` and ``/etc/hostname`` are
  the host's own copies, as each container's are (a line a script adds stays in its host);
  ``/etc/environment`` is the host's own (SageMaker's MPI drivers write the rank environment
  there for the sshd sessions mpirun opens);
- ``/tmp`` and ``/dev/shm`` are the host's own, as a container's are (``lent.py``): of this
  machine's ``/tmp`` it sees only the folders lent to it, at their paths;
- the hostname is ``algo-K``; once its ``eth0`` is there (the ``network`` file in its state
  folder) the host gives it its address and route (``interface.py``), the command starts, and
  ``ready`` tells ssh sessions they may come;
- with ``listen_ssh``, port 22 answers as a Deep Learning Container's sshd does, for drivers
  that wait for it on every host (the sessions themselves come through ``sshd``);
- the command gets a Docker container's default capabilities only (``capabilities.py``): the
  setup above is the last thing done with more.

Standard library only, started without site-packages: it runs before any of the job's code.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
import time
from pathlib import Path

if __package__:  # imported (by tests, for ``bind``)
    from smdist.backends.local.hosts.namespaced import capabilities, interface
else:  # run as a script, without site-packages: its folder is first on sys.path
    import capabilities
    import interface

OPT_ML = Path("/opt/ml")
SETUP_TIMEOUT = 60.0
SSHD = "/usr/sbin/sshd"


MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
MNT_DETACH = 2
RESOLV_CONF = "/etc/resolv.conf"
# What a read-only remount must keep of the mount it binds (in a user namespace the kernel
# refuses to drop them): statvfs's flag -> mount's.
_KEPT_FLAGS = {
    os.ST_NOSUID: 2, os.ST_NODEV: 4, os.ST_NOEXEC: 8, os.ST_NOATIME: 1024,
    os.ST_NODIRATIME: 2048, os.ST_RELATIME: 1 << 21,
}  # fmt: skip
_LIBC = ctypes.CDLL(None, use_errno=True)


def mount(source: str, target: str, kind: str | None = None, options: str | None = None,
          flags: int = 0) -> None:  # fmt: skip
    """mount(2) itself: a host starts sooner than with a ``mount`` process per mount."""
    done = _LIBC.mount(
        source.encode(), target.encode(), kind.encode() if kind else None, flags,
        options.encode() if options else None,
    )  # fmt: skip
    if done != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {source} on {target}: {os.strerror(error)}")


def unmount(target: str, flags: int = 0) -> None:
    if _LIBC.umount2(target.encode(), flags) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"umount {target}: {os.strerror(error)}")


def bind(source: str, target: str, read_only: bool = False) -> None:
    mount(source, target, flags=MS_BIND)
    if read_only:  # a bind mount is made read-only by remounting it
        held = os.statvfs(target).f_flag
        kept = sum(flag for held_flag, flag in _KEPT_FLAGS.items() if held & held_flag)
        mount("none", target, flags=MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


def show_channels(views: list[list[str]]) -> None:
    """Each (source, target) shown read-only at ``target``: a channel read in place."""
    for source, target in views:
        try:
            bind(source, target, read_only=True)
        except OSError as error:
            raise SystemExit(f"emulated host: cannot show {source} at {target}: {error}") from None


def provide_opt_ml(scratch: Path) -> None:
    """Make /opt/ml exist in this mount namespace only: an overlay on /opt hides nothing."""
    if OPT_ML.is_dir():
        return
    parent = OPT_ML.parent
    if not parent.is_dir():
        raise SystemExit(f"emulated host: neither {OPT_ML} nor {parent} exists")
    scratch.mkdir(parents=True, exist_ok=True)
    mount("tmpfs", str(scratch), "tmpfs")
    upper, work = scratch / "upper", scratch / "work"
    upper.mkdir()
    work.mkdir()
    options = f"lowerdir={parent},upperdir={upper},workdir={work}"
    try:
        mount("overlay", str(parent), "overlay", options)
    except OSError as error:
        raise SystemExit(f"emulated host: no /opt/ml and no overlayfs: {error}") from None
    OPT_ML.mkdir()


def own_etc_files(private: Path, contents: dict[str, bytes]) -> None:
    """Each ``/etc`` file of ``contents`` (path -> text) as this host's own copy, as every Docker
    container has its own: what a script writes there stays in its host. The copies are on a
    tmpfs mounted in this mount namespace only, then detached: only their bind mounts reach
    them, so neither another host nor this machine sees or changes them."""
    private.mkdir(exist_ok=True)
    mount("tmpfs", str(private), "tmpfs", "mode=0755,size=1m")
    for target, content in contents.items():
        copy = private / Path(target).name
        copy.write_bytes(content)
        copy.chmod(0o644)
        bind(str(copy), target)
    unmount(str(private), MNT_DETACH)


def etc_contents(spec: dict) -> dict[str, bytes]:
    """The host's ``/etc`` files: the job's hosts file, its resolver (the job network's, else
    this machine's), its hostname, where this machine has the file to cover."""
    contents = {"/etc/hosts": Path(spec["hosts_file"]).read_bytes()}
    resolver = spec.get("resolv_conf") or RESOLV_CONF
    if os.path.isfile(RESOLV_CONF) and os.path.isfile(resolver):
        contents[RESOLV_CONF] = Path(resolver).read_bytes()
    if os.path.isfile("/etc/hostname"):
        contents["/etc/hostname"] = f"{spec['host']}\n".encode()
    return contents


def own_tmp(own: str, lent: list[str]) -> None:
    """The host's own ``/tmp`` (the folder ``own``), with the folders ``lent`` from this
    machine's ``/tmp`` at their paths."""
    # Opened before /tmp is covered, then bound from the open folder: its path is hidden by then.
    folders = [os.open(path, os.O_PATH) for path in lent]
    bind(own, "/tmp")
    for path, folder in zip(lent, folders, strict=True):
        source = f"/proc/self/fd/{folder}"
        if os.path.isdir(source):
            os.mkdir(path)
        else:
            open(path, "x").close()
        bind(source, path)
        os.close(folder)


def own_shm() -> None:
    """A fresh ``/dev/shm``: shared-memory names (Open MPI's, NCCL's) are per host too."""
    if os.path.isdir("/dev/shm"):
        mount("tmpfs", "/dev/shm", "tmpfs", "mode=1777")


def await_file(path: Path, what: str) -> None:
    deadline = time.monotonic() + SETUP_TIMEOUT
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"emulated host: {what} never came ({path})")
        time.sleep(0.002)


def _listen_as_sshd() -> None:
    """Keep port 22 open, as a DLC's sshd does, for drivers that wait for it on every host."""
    if Path(SSHD).exists():  # a real sshd will be started by the driver
        return
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 22))
    server.listen()  # before the command starts: drivers check port 22 at once
    if os.fork() != 0:
        server.close()
        return
    with server:
        while True:  # until the host's PID namespace ends
            server.accept()[0].close()


def read_spec(fd: int) -> dict:
    with os.fdopen(fd, "rb") as pipe:
        return json.loads(pipe.read())


def enter(spec: dict) -> None:
    state = Path(spec["state"])
    provide_opt_ml(Path(spec["scratch"]))
    bind(spec["root"], str(OPT_ML))
    show_channels(spec.get("views") or [])  # before /tmp is the host's own: sources may be there
    own_etc_files(state / "etc", etc_contents(spec))
    bind(spec["etc_environment"], "/etc/environment")
    own_tmp(spec["own_tmp"], spec["lent"])
    own_shm()
    socket.sethostname(spec["host"])
    os.chdir(spec.get("cwd") or "/")
    await_file(state / "network", "the host's network")  # cabled from outside
    if spec.get("network"):  # else configured from outside too
        network = spec["network"]
        interface.configure("eth0", network["address"], network["prefix"], network["gateway"])
    try:  # the setup is done: the rest, the command above all, runs as in a container
        capabilities.drop_to_container_set()
    except OSError as error:
        raise SystemExit(f"emulated host: {error}") from None
    if spec.get("listen_ssh"):
        _listen_as_sshd()
    (state / "ready").touch()  # ssh sessions may enter this host now
    argv, env = spec["argv"], spec["env"]
    try:
        os.execvpe(argv[0], argv, env)  # PATH lookup in the host's environment
    except OSError as exc:
        print(f"emulated host: cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        raise SystemExit(127) from None


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: enter.py FD")
    enter(read_spec(int(sys.argv[1])))
