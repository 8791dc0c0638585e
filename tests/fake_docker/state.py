"""What the fake Docker daemon remembers, in its state directory, across fake CLI calls.

``config.json`` (written by ``install``: the images, the Compose version, the mode...),
``state.json`` (the images pulled, the networks and containers, as a daemon keeps them:
containers stay, stopped, until ``compose down`` removes them), ``calls.jsonl`` (every call's
argv) and ``run/`` (each container's hosts file and namespace spec). ``state.json`` is read and
written under an exclusive lock: ``compose up`` updates it while ``ps`` or ``down`` may read it.

Standard library only: the fake CLI runs under the test process's interpreter, isolated.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CONFIG = "config.json"
STATE = "state.json"
LOCK = "state.lock"
CALLS = "calls.jsonl"
RUN = "run"


def read_config(state_dir: Path) -> dict[str, Any]:
    return json.loads((Path(state_dir) / CONFIG).read_text())


def _empty() -> dict[str, Any]:
    # containers by full id; networks by name; runs: every `compose up`'s project and services
    return {"pulled": [], "containers": {}, "networks": {}, "runs": []}


@contextlib.contextmanager
def locked(state_dir: Path, *, write: bool = True) -> Iterator[dict[str, Any]]:
    """The state, exclusively; written back (atomically) when the block ends without error."""
    state_dir = Path(state_dir)
    with open(state_dir / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = state_dir / STATE
        state = json.loads(path.read_text()) if path.is_file() else _empty()
        yield state
        if write:
            scratch = path.with_suffix(f".{os.getpid()}.tmp")
            scratch.write_text(json.dumps(state, indent=1))
            scratch.replace(path)


def read_state(state_dir: Path) -> dict[str, Any]:
    with locked(state_dir, write=False) as state:
        return state


def log_call(state_dir: Path, argv: list[str]) -> None:
    entry = {"argv": argv, "pid": os.getpid(), "time": time.time()}
    # One short append per call: O_APPEND keeps concurrent calls' lines whole.
    with open(Path(state_dir) / CALLS, "a") as calls:
        calls.write(json.dumps(entry) + "\n")


def calls(state_dir: Path) -> list[list[str]]:
    """The argv of every call so far (``["docker", "compose", ...]``), oldest first."""
    path = Path(state_dir) / CALLS
    if not path.is_file():
        return []
    return [json.loads(line)["argv"] for line in path.read_text().splitlines() if line]


# ---- processes -------------------------------------------------------------------------------
def mount_namespace(pid: int) -> str | None:
    """``mnt:[N]`` of process ``pid``, or None when it is gone (or a zombie)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def namespace_members(namespace: str, marker: str) -> list[int]:
    """Live processes in mount namespace ``namespace`` that mounts a path holding ``marker``.

    These are a container's processes: its launcher may start workers in sessions of their own
    (torchrun does), so sessions do not find them all; the mount namespace, like Docker's PID
    namespace, does. ``marker`` (the container's id, in the path of the hosts file bind-mounted
    at its /etc/hosts) guards against a namespace number the kernel reused since.
    """
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and mount_namespace(int(entry.name)) == namespace:
            members.append(int(entry.name))
    try:
        if members and marker not in Path(f"/proc/{members[0]}/mountinfo").read_text():
            return []
    except OSError:  # gone meanwhile
        return []
    return sorted(members)


def container_processes(container: dict[str, Any]) -> list[int]:
    """Live processes of a recorded container."""
    if not container.get("namespace"):
        return []
    return namespace_members(container["namespace"], container["id"])


def live_processes(state: dict[str, Any]) -> list[int]:
    """Processes still running in any recorded container."""
    found: set[int] = set()
    for container in state["containers"].values():
        found.update(container_processes(container))
    return sorted(found)
