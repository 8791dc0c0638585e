"""Hosts each in Linux namespaces of their own, as containers are: ``/opt/ml`` at its real
path, the hostname ``algo-K``, ``eth0`` on the job's own network with SageMaker's fixed ports,
its own ``/etc/hosts``, channels shown read-only in place, and an sshd through which mpirun
reaches the hosts after the first (``HostCluster`` holds what they share)."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any

from smdist.backends.local.hosts.base import HostSet
from smdist.backends.local.hosts.names import HostNames
from smdist.backends.local.hosts.namespaced.cluster import HostCluster, init_pid
from smdist.backends.local.hosts.namespaced.switch import host_address
from smdist.backends.local.processes.environment import JobSettings
from smdist.contract.host import CONTAINER_BASE, CONTAINER_INTERFACE, TORCHRUN_PORT
from smdist.spec.topology import host_names

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.preparation.layout import LocalLayout
    from smdist.backends.local.processes.host_command import HostCommand, PreparedHosts


class NamespacedHosts(HostSet):
    """Host commands each in its host's namespaces."""

    inside = Path(str(PurePosixPath(CONTAINER_BASE)))
    reads_channels_in_place = True

    def __init__(
        self, *, user_namespace: bool, route_out: bool, notes: tuple[str, ...] = ()
    ) -> None:
        self.user_namespace, self.route_out, self.notes = user_namespace, route_out, notes
        self.cluster: HostCluster | None = None
        self.roots: list[Path] = []
        # (index, environment) of hosts that run no command of their own (an MPI job's
        # workers, which mpirun reaches over ssh), and the channels each host shows in place.
        self.idle: list[tuple[int, dict[str, str]]] = []
        self.views: dict[int, tuple[tuple[str, str], ...]] = {}
        self._closed = False
        self._uncabled: list[tuple[int, subprocess.Popen]] = []
        self._network: tuple[str | None, Exception | None] | None = None

    def names(self, count: int) -> HostNames:
        names = host_names(count)  # /etc/hosts in each host names them all
        return HostNames(names, [host_address(k) for k in range(1, count + 1)])

    def prepare(self, job_dir: Path, hosts: list[EmulatedHost], python: str, label: str) -> bool:
        self.cluster = HostCluster(
            [host.name for host in hosts],
            route_out=self.route_out,
            user_namespace=self.user_namespace,
            label=label,
            lend=[job_dir, Path(python)],
        )
        self.roots = [host.base for host in hosts]
        return True  # the job's thread makes the hosts' network while the code is copied

    def job_settings(
        self, common: dict[str, Any], layout: LocalLayout, names: HostNames, job_dir: Path
    ) -> JobSettings:
        """SageMaker's interface and fixed ports: each host has its own network."""
        return JobSettings(
            **common, master_port=TORCHRUN_PORT, names_environment={},
            interface=CONTAINER_INTERFACE, tools=self._cluster.tools,
        )  # fmt: skip

    def mpirun_client(
        self,
        hosts: list[EmulatedHost],
        environments: list[dict[str, str]],
        layout: LocalLayout,
        bin_dir: Path,
        python: str,
    ) -> tuple[dict[str, str], Path]:
        """The first host's own environment; each host's is its sshd's."""
        first = environments[0]
        main_env = {**first, "LD_LIBRARY_PATH": first.get("LD_LIBRARY_PATH", "")}
        return main_env, self._cluster.tools / "ssh"

    def commands_ready(self, prepared: PreparedHosts, views: dict[int, Any]) -> None:
        self.idle = prepared.idle()  # the workers mpirun reaches run nothing of their own
        self.views = views

    @property
    def _cluster(self) -> HostCluster:
        assert self.cluster is not None, "prepare() makes the hosts' cluster"
        return self.cluster

    # ---- the hosts' first processes -------------------------------------------------------
    def open_network(self) -> None:
        try:
            self._network = (self._cluster.open(), None)
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
            process = self._cluster.start_idle(
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
        process = self._cluster.start(
            index + 1, self.roots[index], argv, command.env, cwd=str(command.cwd),
            stdout=output, stderr=subprocess.STDOUT, cable=False,
            views=self.views.get(index, ()),
        )  # fmt: skip
        self._uncabled.append((index + 1, process))
        return process

    def all_spawned(self) -> None:
        """Cable every host now that all have started (their namespaces made meanwhile)."""
        uncabled, self._uncabled = self._uncabled, []
        self._cluster.cable_all(uncabled)

    def signal_pid(self, process: subprocess.Popen) -> int | None:
        return init_pid(process.pid)  # unshare ignores SIGTERM; the host's PID 1 takes it

    def parent_pid(self) -> int:
        return 0  # the init's parent is unshare, which it dies with (its death signal)

    def close(self) -> None:
        if not self._closed and self.cluster is not None:
            self._closed = True
            self.cluster.close()
