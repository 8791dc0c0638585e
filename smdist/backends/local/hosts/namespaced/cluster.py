"""A job's emulated hosts, each in its own namespaces, on one network with one sshd.

``HostCluster`` holds what the hosts share: a private run folder (their state folders, the
``/etc/hosts`` naming them, the ``ssh`` client, the sshd socket), the bridge (``switch``) and the
sshd (``sshd.SessionBroker``). ``open`` and every ``start`` must come from the thread the hosts'
lives are tied to: they die with it. ``close`` removes everything; nothing stays mounted or
running, since each host's namespaces end with its first process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO

from smdist.backends.job_records import process_identity
from smdist.backends.local.hosts.namespaced.host import (
    HostSpec,
    init_pid,
    network_ready,
    start_host,
)
from smdist.backends.local.hosts.namespaced.lent import lent_paths
from smdist.backends.local.hosts.namespaced.probe import SYSTEM_PATH
from smdist.backends.local.hosts.namespaced.sshd import (
    SSHD_AFTER_ENVIRONMENT,
    SessionBroker,
    write_client,
)
from smdist.backends.local.hosts.namespaced.switch import (
    GATEWAY,
    Switch,
    add_ports,
    host_address,
    hosts_file,
    start_switch,
    write_resolver,
)

RUN_PREFIX = "smdist-"
OWNER = "owner"  # [pid, start] of the process whose hosts these are


def remove_abandoned_runs() -> None:
    """Remove the run folders of clusters whose process is gone without closing them (it was
    killed with SIGKILL: its hosts died with it, their folder stayed)."""
    for owner in Path(tempfile.gettempdir()).glob(f"{RUN_PREFIX}*/{OWNER}"):
        try:
            identity = json.loads(owner.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(identity, list) or process_identity(identity[0]) != identity:
            shutil.rmtree(owner.parent, ignore_errors=True)


class HostCluster:
    """The hosts ``names`` (algo-1 first); ``route_out``: they reach what this machine reaches
    (else only each other, as with ``enable_network_isolation``); ``user_namespace``: made
    without root; ``label``: in the name of the run folder; ``lend``: what the hosts run from
    or read (the job's folder), which they see where it lies in this machine's /tmp."""

    def __init__(
        self,
        names: list[str],
        *,
        route_out: bool,
        user_namespace: bool,
        label: str = "hosts",
        lend: list[Path] | None = None,
    ) -> None:
        self.names = list(names)
        self.lend = list(lend or [])
        self.route_out = route_out
        self.user_namespace = user_namespace
        remove_abandoned_runs()
        # Short (the sshd socket's path has a 108-byte limit) and private (mode 0700); ``label``
        # (the job's name) says whose it is, ``owner`` which process made it.
        self.run = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{label[:64]}-"))
        (self.run / OWNER).write_text(json.dumps(process_identity()))
        self.hosts_file = self.run / "hosts"  # each host starts with its own copy of it
        self.hosts_file.write_text(hosts_file(self.names))
        self.tools = self.run / "bin"  # first on every host's PATH: its ``ssh``
        write_client(self.tools, self.run)
        self.environments: dict[str, dict[str, str]] = {}
        self.switch: Switch | None = None
        self._broker: SessionBroker | None = None
        self._resolver: Path | None = None
        self._idle: list[subprocess.Popen] = []

    @property
    def routes_out(self) -> bool:
        return self.switch is not None and self.switch.routes_out

    def open(self) -> str | None:
        """Make the network and start the sshd; returns why the hosts have no route out where
        one was asked for and could not be made (they still reach each other), else None."""
        self.switch = start_switch(route_out=self.route_out, user_namespace=self.user_namespace)
        if self.switch.routes_out:
            self._resolver = write_resolver(self.run)
        userns = self.switch.pid if self.user_namespace else None
        self._broker = SessionBroker(self.run, self.environments, userns)
        return self.switch.router_problem

    def start(
        self,
        index: int,
        root: Path,
        argv: list[str],
        env: dict[str, str],
        *,
        cwd: str = "/",
        stdout: IO[bytes] | int,
        stderr: IO[bytes] | int,
        listen_ssh: bool = False,
        command_env: dict[str, str] | None = None,
        cable: bool = True,
        views: tuple[tuple[str, str], ...] = (),
    ) -> subprocess.Popen:
        """Start host ``index`` (from 1) with ``root`` as its /opt/ml, running ``argv`` with
        ``env`` (or ``command_env``; ``env`` is what its ssh sessions start from), ``views``
        (source, path inside) shown read-only; returns its
        ``unshare`` (which ignores SIGTERM: signal ``init_pid(process.pid)``). The command runs
        once the host is cabled: here, or with ``cable=False`` by ``cable(index, process)``
        (hosts started together, then cabled, start sooner)."""
        assert self.switch is not None, "open() first"
        name = self.names[index - 1]
        self.environments[name] = env
        own = env if command_env is None else command_env
        # From both environments: a worker mpirun reaches runs its ranks in ssh sessions (``env``)
        # while its own command (``own``) names none of their paths.
        lent = lent_paths([self.run, root, *self.lend, *argv[:1]], env, own)
        gateway = GATEWAY if self.switch.routes_out else None
        network = {"address": host_address(index), "prefix": 24, "gateway": gateway}
        spec = HostSpec(
            name, root, self.hosts_file, argv, own, cwd, listen_ssh, self._resolver,
            tuple(lent), network, views,
        )  # fmt: skip
        userns = self.switch.pid if self.user_namespace else None
        if listen_ssh and index > 1:  # its sessions wait for what its driver publishes
            (self.run / name).mkdir(exist_ok=True)
            (self.run / name / SSHD_AFTER_ENVIRONMENT).touch()
        process = start_host(
            self.run / name, spec, stdout=stdout, stderr=stderr, user_namespace=userns
        )
        if cable:
            self.cable(index, process)
        return process

    def cable(self, index: int, process: subprocess.Popen) -> None:
        """Give the started host ``index`` its ``eth0``; its command then runs."""
        self.cable_all([(index, process)])

    def cable_all(self, hosts: list[tuple[int, subprocess.Popen]]) -> None:
        """``cable`` for several started hosts (index, process) at once: one ``ip`` for all."""
        assert self.switch is not None, "open() first"
        try:
            add_ports(self.switch, [(process.pid, index) for index, process in hosts])
        except BaseException:
            for _, process in hosts:
                process.kill()
                process.wait()
            raise
        for index, _ in hosts:
            network_ready(self.run / self.names[index - 1])

    def start_idle(
        self,
        index: int,
        root: Path,
        env: dict[str, str],
        *,
        cable: bool = True,
        views: tuple[tuple[str, str], ...] = (),
    ) -> subprocess.Popen:
        """A host that runs nothing of its own: a worker mpirun reaches over ssh. (Its first
        process does not carry the job's environment: it is no process of the job's.)"""
        process = self.start(
            index, root, ["sleep", "infinity"], env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, command_env={"PATH": SYSTEM_PATH}, cable=cable,
            views=views,
        )  # fmt: skip
        self._idle.append(process)
        return process

    def close(self) -> None:
        """End the idle hosts, the sshd and the network, and remove the run folder."""
        for process in self._idle:
            if process.poll() is None:
                process.kill()  # unshare's end kills the host's PID 1, and with it the host
                process.wait()
        if self._broker is not None:
            self._broker.close()
        if self.switch is not None:
            self.switch.stop()
        shutil.rmtree(self.run, ignore_errors=True)


__all__ = ["HostCluster", "init_pid"]
