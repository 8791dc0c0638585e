"""The job's network: each host's ``eth0`` cabled to one bridge in a namespace of the job's own.

The bridge lives in a network namespace held by a ``sleep`` process of the job's (the switch),
so no link or address lands on this machine's own network. Host K's ``eth0`` is 10.0.0.K/24.
"""

from __future__ import annotations

import os
import subprocess
import time

from smdist.backends.local.hostns.probe import SYSTEM_PATH

SETUP_TIMEOUT = 30.0  # seconds a just-started host may take to have its own network namespace


def host_address(index: int) -> str:
    """algo-K's address (K from 1) on the job's network."""
    return f"10.0.0.{index}"


def hosts_file(names: list[str]) -> str:
    """The ``/etc/hosts`` every host of the job sees."""
    lines = ["127.0.0.1 localhost"]
    lines += [f"{host_address(index)} {name}" for index, name in enumerate(names, start=1)]
    return "\n".join(lines) + "\n"


def _ip(*arguments: str, inside: int | None = None) -> None:
    """``ip ARGUMENTS``, in the network namespace of process ``inside`` when given."""
    enter = ["nsenter", "--target", str(inside), "--net", "--"] if inside else []
    done = subprocess.run(
        [*enter, "ip", *arguments], capture_output=True, text=True, env={"PATH": SYSTEM_PATH}
    )
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(arguments)}: {done.stderr.strip()}")


def await_own_network(pid: int) -> None:
    """Wait until process ``pid`` (just started by unshare) is in a network namespace of its
    own."""
    deadline = time.monotonic() + SETUP_TIMEOUT
    while os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} never got a network namespace of its own")
        time.sleep(0.02)


def start_switch() -> subprocess.Popen:
    """The process holding the namespace of the job's bridge; end it to remove the network.
    It dies with the process that started it (SIGKILL on its parent's death), so the network
    never outlives the job."""
    switch = subprocess.Popen(
        ["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--net", "--", "sleep", "infinity"],
        start_new_session=True, env={"PATH": SYSTEM_PATH},
    )  # fmt: skip
    await_own_network(switch.pid)
    _ip("link", "add", "br0", "type", "bridge", inside=switch.pid)
    _ip("link", "set", "br0", "up", inside=switch.pid)
    return switch


def plug_in(host: int, index: int, switch: int) -> None:
    """Give host process ``host`` an ``eth0`` with algo-``index``'s address on the bridge of
    switch process ``switch``."""
    await_own_network(host)
    port = f"veth{index}"
    _ip("link", "add", "eth0", "netns", str(host), "type", "veth",
        "peer", "name", port, "netns", str(switch))  # fmt: skip
    _ip("link", "set", port, "master", "br0", "up", inside=switch)
    _ip("addr", "add", f"{host_address(index)}/24", "dev", "eth0", inside=host)
    _ip("link", "set", "eth0", "up", inside=host)
    _ip("link", "set", "lo", "up", inside=host)
