"""Start an emulated host: ``unshare`` gives it new mount, UTS, network and PID namespaces, and
``enter.py`` makes them the host's before it execs the host's command.

A host's state folder holds what the others need from it: ``pid`` (unshare's: it is in the
host's mount, UTS and network namespaces, and its child, ``enter`` then the command, is PID 1
of the host's PID namespace), ``env.json`` and ``etc-environment`` (what an ssh session on
the host starts from), ``network`` (written once its ``eth0`` is cabled) and ``ready``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from smdist.backends.local.hostns.probe import SYSTEM_PATH

ENTER = Path(__file__).with_name("enter.py")
ETC_ENVIRONMENT = "etc-environment"


@dataclass(frozen=True)
class HostSpec:
    """One host: its name, the folder that is its /opt/ml, the job's /etc/hosts, its command
    and the environment the command starts with."""

    name: str
    root: Path
    hosts_file: Path
    argv: list[str]
    env: dict[str, str]
    cwd: str = "/"
    listen_ssh: bool = False  # port 22 answers, as a DLC's sshd does


def start_host(
    state: Path, spec: HostSpec, *, stdout: IO[bytes] | int, stderr: IO[bytes] | int
) -> subprocess.Popen:
    """Start ``spec``'s host with ``state`` as its state folder; it runs its command once
    ``state/network`` exists (see ``switch.plug_in``)."""
    state.mkdir(parents=True, exist_ok=True)
    (state / "env.json").write_text(json.dumps(spec.env))
    (state / ETC_ENVIRONMENT).write_text("")  # the host's own /etc/environment
    (state / "enter.json").write_text(
        json.dumps(
            {
                "host": spec.name,
                "root": str(spec.root),
                "hosts_file": str(spec.hosts_file),
                "etc_environment": str(state / ETC_ENVIRONMENT),
                "scratch": str(state / "scratch"),
                "state": str(state),
                "cwd": spec.cwd,
                "listen_ssh": spec.listen_ssh,
                "argv": spec.argv,
                "env": spec.env,
            }
        )
    )
    # --fork: enter is PID 1 of the host's PID namespace; --kill-child: it dies with unshare.
    command = ["unshare", "--mount", "--uts", "--net", "--pid", "--kill-child", "--mount-proc",
               "--propagation", "private", "--",
               sys.executable, "-S", "-E", str(ENTER), str(state / "enter.json")]  # fmt: skip
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
        env={"PATH": SYSTEM_PATH}, start_new_session=True,
    )  # fmt: skip
    (state / "pid").write_text(str(process.pid))
    return process


def network_ready(state: Path) -> None:
    """Tell the host its ``eth0`` is cabled: it may run its command."""
    (state / "network").touch()
