"""How an emulated host's first process starts: in namespaces of its own (a host: ``/opt/ml``
at its real path, its hostname, its ``eth0`` and ports), or, where this machine cannot make
them or the user turned them off, as a plain process sharing this machine's files and network.

``host_mode`` decides (before anything starts) and says what the shared way does not
reproduce; the supervisor starts every host command through a starter of that mode.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from smdist.backends.local.hostns.cluster import HostCluster, init_pid
from smdist.backends.local.hostns.probe import namespace_support
from smdist.backends.local.hostns.switch import router_path

if TYPE_CHECKING:
    from smdist.backends.local.launch import HostCommand

SHARED_LIMITS = (
    "the hosts share this machine's files and network, so a script's literal /opt/ml paths "
    "are this machine's /opt/ml, not its host's folder (SM_MODEL_DIR, SM_CHANNEL_* and the "
    "other SM_* variables are right), and each host gets other ports than SageMaker's fixed "
    "ones (a port or TF_CONFIG the script fixes itself collides between hosts)"
)
NO_ROUTE = (
    "the hosts reach only each other: slirp4netns, which gives them this machine's outbound "
    "network, is not installed (Debian/Ubuntu: apt-get install slirp4netns)"
)


class HostModeError(RuntimeError):
    """Namespaces were asked for where this machine cannot make them."""


@dataclass(frozen=True)
class HostMode:
    """``namespaces``: each host in its own; ``user_namespace``: made without root;
    ``route_out``: the hosts reach what this machine reaches; ``notes``: what the log says."""

    namespaces: bool
    user_namespace: bool = False
    route_out: bool = False
    notes: tuple[str, ...] = ()


def host_mode(wanted: bool | None, isolated: bool) -> HostMode:
    """``wanted``: True insists on namespaces, False turns them off, None uses them where this
    machine can make them; ``isolated``: the job's ``network.isolation``."""
    if wanted is False:
        return HostMode(False, notes=(f"namespaces turned off: {SHARED_LIMITS}",))
    support = namespace_support()
    if support.mode is None:
        if wanted:
            raise HostModeError(f"the hosts cannot have namespaces here: {support.problem}")
        return HostMode(False, notes=(f"{support.problem}: {SHARED_LIMITS}",))
    route_out = not isolated and router_path() is not None
    notes = () if isolated or route_out else (NO_ROUTE,)
    return HostMode(True, support.user_namespace, route_out, notes)


class HostStarter(Protocol):
    def open(self) -> str | None: ...  # a note for the log, if any
    def spawn(
        self, command: HostCommand, argv: list[str], output: IO[bytes] | int
    ) -> subprocess.Popen: ...  # noqa: E501
    def signal_pid(self, process: subprocess.Popen) -> int | None: ...
    def parent_pid(self) -> int: ...
    def close(self) -> None: ...


class SharedHosts:
    """Host commands as plain processes of this machine."""

    def open(self) -> str | None:
        return None

    def spawn(
        self, command: HostCommand, argv: list[str], output: IO[bytes] | int
    ) -> subprocess.Popen:
        return subprocess.Popen(
            argv, cwd=command.cwd, env=command.env, stdin=subprocess.DEVNULL, stdout=output,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def all_spawned(self) -> None:
        pass

    def signal_pid(self, process: subprocess.Popen) -> int | None:
        return process.pid

    def parent_pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        pass


class NamespaceHosts:
    """Host commands each in its host's namespaces (``cluster``); ``roots``: each host's
    folder, its /opt/ml; ``idle``: (index, environment) of hosts that run no command of their
    own (an MPI job's workers, which mpirun reaches over ssh); ``views``: the channels each host
    reads in place (index -> (source, path inside))."""

    def __init__(
        self,
        cluster: HostCluster,
        roots: list[Path],
        idle: list[tuple[int, dict[str, str]]] | None = None,
        views: dict[int, tuple[tuple[str, str], ...]] | None = None,
    ) -> None:
        self.cluster = cluster
        self.roots = roots
        self.idle = idle or []
        self.views = views or {}
        self._closed = False
        self._uncabled: list[tuple[int, subprocess.Popen]] = []
        self._network: tuple[str | None, Exception | None] | None = None

    def open_network(self) -> None:
        """Make the job's network now, ahead of ``open`` (which raises what failed here)."""
        try:
            self._network = (self.cluster.open(), None)
        except Exception as error:  # noqa: BLE001 - raised by open(), where the job fails
            self._network = (None, error)

    def open(self) -> str | None:
        if self._network is None:
            self.open_network()
        assert self._network is not None
        problem, error = self._network
        if error is not None:
            raise error
        for index, env in self.idle:
            process = self.cluster.start_idle(
                index + 1, self.roots[index], env, cable=False, views=self.views.get(index, ())
            )
            self._uncabled.append((index + 1, process))
        if problem is None:
            return None
        return f"the hosts reach only each other: no route out of the job's network ({problem})"

    def spawn(
        self, command: HostCommand, argv: list[str], output: IO[bytes] | int
    ) -> subprocess.Popen:
        index = command.host.index
        process = self.cluster.start(
            index + 1, self.roots[index], argv, command.env, cwd=str(command.cwd),
            stdout=output, stderr=subprocess.STDOUT, cable=False,
            views=self.views.get(index, ()),
        )  # fmt: skip
        self._uncabled.append((index + 1, process))
        return process

    def all_spawned(self) -> None:
        """Cable every host now that all have started (their namespaces made meanwhile)."""
        uncabled, self._uncabled = self._uncabled, []
        self.cluster.cable_all(uncabled)

    def signal_pid(self, process: subprocess.Popen) -> int | None:
        return init_pid(process.pid)  # unshare ignores SIGTERM; the host's PID 1 takes it

    def parent_pid(self) -> int:
        return 0  # the init's parent is unshare, which it dies with (its death signal)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.cluster.close()
