"""Start an emulated host: ``unshare`` gives it new mount, UTS, network and PID namespaces, and
``enter.py`` makes them the host's before it execs the host's command.

A host's state folder holds what the others need from it: ``pid`` (unshare's: it is in the
host's mount, UTS and network namespaces, and its child, ``enter`` then the command, is PID 1
of the host's PID namespace), ``etc-environment`` (the host's ``/etc/environment``, which an ssh
session on the host reads), ``network`` (written once its ``eth0`` is cabled) and ``ready``.
The host's spec, environment included, reaches ``enter`` through a pipe, never a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from smdist.backends.local.hosts.namespaced.probe import SYSTEM_PATH
from smdist.backends.local.hosts.namespaced.sshd import SSHD_AFTER_ENVIRONMENT

ENTER = Path(__file__).with_name("enter.py")
ETC_ENVIRONMENT = "etc-environment"


@dataclass(frozen=True)
class HostSpec:
    """One host: its name, the folder that is its /opt/ml, the job's hosts file (the host's
    /etc/hosts is its own copy of it), its command and the environment the command starts
    with."""

    name: str
    root: Path
    hosts_file: Path
    argv: list[str]
    env: dict[str, str]
    cwd: str = "/"
    listen_ssh: bool = False  # port 22 answers, as a DLC's sshd does
    resolv_conf: Path | None = None  # instead of the machine's /etc/resolv.conf
    lent: tuple[str, ...] = ()  # folders of this machine's /tmp the host sees (lent.py)
    network: dict | None = None  # eth0's address, prefix and gateway, which the host sets
    # (source on this machine, path inside the host): shown read-only there (input channels)
    views: tuple[tuple[str, str], ...] = ()


def namespace_command(user_namespace: int | None = None) -> list[str]:
    """The host's namespaces: new mount, UTS, network and PID ones (``enter`` is PID 1 and
    dies with unshare), inside the user namespace of process ``user_namespace`` when given
    (hosts made without root)."""
    # setpriv: unshare dies with the thread that started it, so a host never outlives smdist.
    command = ["setpriv", "--pdeathsig", "KILL", "--"]
    if user_namespace is not None:
        command += ["nsenter", f"--target={user_namespace}", "--user", "--preserve-credentials",
                    "--"]  # fmt: skip
    return command + ["unshare", "--mount", "--uts", "--net", "--pid", "--kill-child",
                      "--mount-proc", "--propagation", "private", "--"]  # fmt: skip


def start_host(
    state: Path,
    spec: HostSpec,
    *,
    stdout: IO[bytes] | int,
    stderr: IO[bytes] | int,
    user_namespace: int | None = None,
) -> subprocess.Popen:
    """Start ``spec``'s host with ``state`` as its state folder; it runs its command once
    ``state/network`` exists (see ``switch.plug_in``)."""
    state.mkdir(parents=True, exist_ok=True)
    (state / ETC_ENVIRONMENT).write_text("")  # the host's own /etc/environment
    if spec.listen_ssh:
        (state / SSHD_AFTER_ENVIRONMENT).touch()
    own_tmp = state / "tmp"
    own_tmp.mkdir(exist_ok=True)
    own_tmp.chmod(0o1777)  # as /tmp is: everyone's, each one's own files
    enter_spec = {
        "host": spec.name,
        "root": str(spec.root),
        "hosts_file": str(spec.hosts_file),
        "etc_environment": str(state / ETC_ENVIRONMENT),
        "resolv_conf": str(spec.resolv_conf) if spec.resolv_conf else None,
        "scratch": str(state / "scratch"),
        "own_tmp": str(own_tmp),
        "lent": list(spec.lent),
        "network": spec.network,
        "views": [list(view) for view in spec.views],
        "state": str(state),
        "cwd": spec.cwd,
        "listen_ssh": spec.listen_ssh,
        "argv": spec.argv,
        "env": spec.env,
    }
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [*namespace_command(user_namespace), sys.executable, "-S", "-E", str(ENTER),
             str(read_end)],
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, pass_fds=(read_end,),
            env={"PATH": SYSTEM_PATH}, start_new_session=True,
        )  # fmt: skip
    finally:
        os.close(read_end)
    with os.fdopen(write_end, "wb") as pipe:
        pipe.write(json.dumps(enter_spec).encode())
    (state / "pid").write_text(str(process.pid))
    return process


def init_pid(unshare: int) -> int | None:
    """PID 1 of the host started by ``unshare`` (its only child), as this machine numbers it;
    None once it is gone. unshare itself ignores SIGTERM: a stop is sent here."""
    try:
        children = Path(f"/proc/{unshare}/task/{unshare}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def network_ready(state: Path) -> None:
    """Tell the host its ``eth0`` is cabled: it may run its command."""
    (state / "network").touch()
