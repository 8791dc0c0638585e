"""The one interface of the two ways emulated hosts are made (``namespaced``, ``shared``).

Everything that differs between a host in namespaces of its own and a host sharing this
machine is a member here, so no other part of the local backend asks which way is in use:
the hosts' names and where their processes see their folders, how channels reach them, the
site their environment describes (interface, ports, how names resolve), the ssh client mpirun
reaches them through, and how a host's first process is started, signalled and ended.
"""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.hosts.names import HostNames
    from smdist.backends.local.preparation.layout import LocalLayout
    from smdist.backends.local.processes.environment import JobSettings
    from smdist.backends.local.processes.host_command import HostCommand, PreparedHosts


class HostSet(ABC):
    """A job's emulated hosts, made one way."""

    # What this way does not reproduce of SageMaker, said in the job's log.
    notes: tuple[str, ...] = ()
    # Where a host's processes see its folder (/opt/ml), None: where it is on this machine.
    inside: Path | None = None
    # A FullyReplicated channel is shown read-only in place (a host has its own mounts).
    reads_channels_in_place: bool = False

    @abstractmethod
    def names(self, count: int) -> HostNames:
        """The hosts' names and addresses, and how the names reach their processes."""

    def prepare(self, job_dir: Path, hosts: list[EmulatedHost], python: str, label: str) -> bool:
        """Get ready to start ``hosts`` (before the code is copied); True when ``open_network``
        should run meanwhile, from the thread the hosts' lives will be tied to."""
        return False

    @abstractmethod
    def job_settings(
        self, common: dict[str, Any], layout: LocalLayout, names: HostNames, job_dir: Path
    ) -> JobSettings:
        """What every host's environment shares, with this way's interface and ports."""

    @abstractmethod
    def mpirun_client(
        self,
        hosts: list[EmulatedHost],
        environments: list[dict[str, str]],
        layout: LocalLayout,
        bin_dir: Path,
        python: str,
    ) -> tuple[dict[str, str], Path]:
        """mpirun's environment on the first host, and the ``ssh`` it reaches the others by."""

    def commands_ready(self, prepared: PreparedHosts, views: dict[int, Any]) -> None:  # noqa: B027 - optional
        """The hosts' commands are known (and which hosts run none); ``views``: the channels
        each host shows in place (index -> ((source, path inside), ...))."""

    # ---- the hosts' first processes (the supervisor's starter) --------------------------------
    def open_network(self) -> None:  # noqa: B027 - optional
        """Make the hosts' network ahead of ``open`` (which raises what failed here)."""

    def open(self) -> str | None:
        """Make the hosts ready to start; a note for the log, if any."""
        return None

    @abstractmethod
    def spawn(
        self, command: HostCommand, argv: list[str], output: IO[bytes] | int
    ) -> subprocess.Popen:
        """Start ``argv``, ``command``'s host's first process."""

    def all_spawned(self) -> None:  # noqa: B027 - optional
        """Every host's first process has started."""

    @abstractmethod
    def signal_pid(self, process: subprocess.Popen) -> int | None:
        """The pid that takes a signal meant for the host's first process."""

    @abstractmethod
    def parent_pid(self) -> int:
        """The parent the host's first process dies with (0: its own arrangement)."""

    def close(self) -> None:  # noqa: B027 - optional
        """End what ``open`` made; nothing of the hosts is left."""
