"""The job's network: each host's ``eth0`` cabled to one bridge in a namespace of the job's own.

The bridge lives in a network namespace held by a ``sleep`` process of the job's (the switch),
so no link, address or rule lands on this machine's own network. Host K's ``eth0`` is
10.0.0.(10+K)/24. With a route out, ``slirp4netns`` (user-mode networking, the helper rootless
containers use) is cabled to the same bridge: it is the hosts' gateway (10.0.0.2) and DNS
server (10.0.0.3), and opens their connections as this machine's own sockets, so a host reaches
what this machine reaches. Without it (``enable_network_isolation``, or no slirp4netns) the
hosts reach only each other.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from smdist.backends.local.hosts.namespaced.probe import SYSTEM_PATH

SETUP_TIMEOUT = 30.0  # seconds a just-started host may take to have its own network namespace
NETWORK = "10.0.0.0/24"
GATEWAY = "10.0.0.2"  # slirp4netns's address on the job's network
DNS_SERVER = "10.0.0.3"  # slirp4netns's resolver, which forwards to this machine's
FIRST_HOST = 10  # algo-1 is 10.0.0.11
ROUTER = "slirp4netns"


def host_address(index: int) -> str:
    """algo-K's address (K from 1) on the job's network."""
    return f"10.0.0.{FIRST_HOST + index}"


def hosts_file(names: list[str]) -> str:
    """The ``/etc/hosts`` every host of the job sees."""
    lines = ["127.0.0.1 localhost"]
    lines += [f"{host_address(index)} {name}" for index, name in enumerate(names, start=1)]
    return "\n".join(lines) + "\n"


def resolver_file(text: str) -> str | None:
    """The hosts' ``/etc/resolv.conf`` when this machine's (``text``) names a loopback server,
    which a host cannot reach: the router's resolver instead. None: the machine's will do."""
    servers = [line.split()[1] for line in text.splitlines()
               if line.startswith("nameserver") and len(line.split()) > 1]  # fmt: skip
    try:
        if not any(ipaddress.ip_address(server.split("%")[0]).is_loopback for server in servers):
            return None
    except ValueError:
        return None
    kept = [line for line in text.splitlines() if not line.startswith("nameserver")]
    return "\n".join([f"nameserver {DNS_SERVER}", *kept]) + "\n"


def _ip(*commands: list[str], inside: int | None = None, user: bool = False) -> None:
    """``ip`` commands (one process: ``ip -batch``), in the network namespace of process
    ``inside`` when given (and its user namespace with ``user``: hosts made without root)."""
    enter = []
    if inside:
        enter = ["nsenter", "--target", str(inside), *(["--user", "--preserve-credentials"]
                 if user else []), "--net", "--"]  # fmt: skip
    done = subprocess.run(
        [*enter, "ip", "-batch", "-"], input="".join(" ".join(c) + "\n" for c in commands),
        capture_output=True, text=True, env={"PATH": SYSTEM_PATH},
    )  # fmt: skip
    if done.returncode != 0:
        listed = "; ".join(" ".join(command) for command in commands)
        raise RuntimeError(f"ip {listed}: {done.stderr.strip()}")


def await_own_network(pid: int, user_namespace: bool = False) -> None:
    """Wait until process ``pid`` (just started by unshare) is in a network namespace of its
    own, and with ``user_namespace``, until its user namespace maps root: unshare makes both
    namespaces first and writes the map after, and a process that enters the user namespace
    before the map is written may not add links to the network (``Operation not permitted``)."""
    deadline = time.monotonic() + SETUP_TIMEOUT
    while not _network_ready(pid, user_namespace):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} never got a network namespace of its own")
        time.sleep(0.002)


def _network_ready(pid: int, user_namespace: bool) -> bool:
    if os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net"):
        return False
    if not user_namespace:
        return True
    with open(f"/proc/{pid}/uid_map") as uid_map, open(f"/proc/{pid}/gid_map") as gid_map:
        return bool(uid_map.read().strip() and gid_map.read().strip())


def router_path() -> str | None:
    return shutil.which(ROUTER, path=SYSTEM_PATH)


@dataclass
class Switch:
    """The job's bridge (``process`` holds its namespace) and its router, if any."""

    process: subprocess.Popen
    user_namespace: bool = False  # made without root: the switch's user namespace is the job's
    router: subprocess.Popen | None = None
    router_problem: str | None = None  # why a route out was asked for and not made

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def routes_out(self) -> bool:
        return self.router is not None

    def stop(self) -> None:
        """Remove the network: its links go with the namespace."""
        for process in (self.router, self.process):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout)


def start_switch(*, route_out: bool = False, user_namespace: bool = False) -> Switch:
    """The job's bridge, with a route out through ``slirp4netns`` when ``route_out`` (and the
    helper is installed); ``user_namespace``: made without root, in a user namespace of its own
    that every host of the job then joins. The switch and router die with the thread that
    started them (SIGKILL on its death), so the network never outlives the job."""
    user = ["--user", "--map-root-user"] if user_namespace else []
    process = subprocess.Popen(
        ["setpriv", "--pdeathsig", "KILL", "--", "unshare", *user, "--net", "--",
         "sleep", "infinity"],
        start_new_session=True, env={"PATH": SYSTEM_PATH},
    )  # fmt: skip
    switch = Switch(process, user_namespace)
    try:
        await_own_network(process.pid, user_namespace)
        _ip(["link", "add", "br0", "type", "bridge"], ["link", "set", "br0", "up"],
            inside=process.pid, user=user_namespace)  # fmt: skip
        router = router_path()
        if route_out and router is not None:
            try:
                switch.router = _start_router(router, switch)
            except RuntimeError as error:  # the hosts still reach each other
                switch.router_problem = str(error)
    except BaseException:
        switch.stop()
        raise
    return switch


def _start_router(router: str, switch: Switch) -> subprocess.Popen:
    """slirp4netns on the bridge: its tap device joins br0, so it answers at GATEWAY."""
    ready_read, ready_write = os.pipe()
    userns = [f"--userns-path=/proc/{switch.pid}/ns/user"] if switch.user_namespace else []
    try:
        process = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", router, "--mtu=1500",
             "--disable-host-loopback", f"--cidr={NETWORK}", f"--ready-fd={ready_write}",
             *userns, str(switch.pid), "tap0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(ready_write,),
            start_new_session=True, env={"PATH": SYSTEM_PATH},
        )  # fmt: skip
    finally:
        os.close(ready_write)
    with os.fdopen(ready_read, "rb") as ready:
        if ready.read(1) != b"1":  # it writes "1" once the tap device exists
            process.kill()
            message = process.communicate()[1].decode(errors="replace").strip()
            raise RuntimeError(f"{router} did not start: {message}")
    # slirp answers for any address it is sent: frames for a host that is gone (its MAC
    # unknown to the bridge, so flooded) must not reach it, or the dead host seems to answer.
    _ip(["link", "set", "tap0", "master", "br0", "up"],
        ["link", "set", "tap0", "type", "bridge_slave", "flood", "off"],
        inside=switch.pid, user=switch.user_namespace)  # fmt: skip
    return process


def add_ports(switch: Switch, hosts: list[tuple[int, int]]) -> None:
    """The switch's side of ``hosts`` (host process, index), all with one ``ip``: a veth pair
    each, its ``eth0`` end moved into the host's network namespace, the other end on the
    bridge. (Made in the switch's namespace: its user namespace's root may move a link to a
    host.) The host's side, its address and routes, is the host's to make."""
    commands = []
    for host, index in hosts:
        await_own_network(host)
        port = f"veth{index}"
        commands += [["link", "add", "eth0", "netns", str(host), "type", "veth", "peer", "name",
                      port], ["link", "set", port, "master", "br0", "up"]]  # fmt: skip
    if commands:
        _ip(*commands, inside=switch.pid, user=switch.user_namespace)


def plug_in(host: int, index: int, switch: Switch, address: str | None = None) -> None:
    """Give host process ``host`` an ``eth0`` with algo-``index``'s address (or ``address``) on
    ``switch``'s bridge, and the router as its gateway where there is one, both sides made
    from outside (for processes that cannot make their own side)."""
    add_ports(switch, [(host, index)])
    address = address or host_address(index)
    commands = [["addr", "add", f"{address}/24", "dev", "eth0"], ["link", "set", "eth0", "up"],
                ["link", "set", "lo", "up"]]  # fmt: skip
    if switch.routes_out:
        commands.append(["route", "add", "default", "via", GATEWAY])
    _ip(*commands, inside=host, user=switch.user_namespace)


def write_resolver(run: Path) -> Path | None:
    """``run/resolv.conf`` for the hosts, when this machine's would not work in them."""
    try:
        text = Path("/etc/resolv.conf").read_text()
    except OSError:
        return None
    replacement = resolver_file(text)
    if replacement is None:
        return None
    path = run / "resolv.conf"
    path.write_text(replacement)
    return path
