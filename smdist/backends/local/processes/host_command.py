"""What starts an emulated host: its first process's command, environment and folder, and the
job's commands with every host's environment (an MPI job's workers have no command)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from smdist.backends.local.hosts.folders import EmulatedHost


@dataclass(frozen=True)
class HostCommand:
    """One process to start as an emulated host's first process."""

    host: EmulatedHost
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    tags: str | None = None  # output lines carry rank tags of this launcher
    rank_hosts: list[str] = field(default_factory=list)  # global rank -> host name


@dataclass(frozen=True)
class PreparedHosts:
    """Each host's environment and the commands that start the job (an MPI job's worker hosts
    have an environment but no command: mpirun reaches them)."""

    commands: list[HostCommand]
    environments: list[dict[str, str]]

    def idle(self) -> list[tuple[int, dict[str, str]]]:
        started = {command.host.index for command in self.commands}
        return [(i, env) for i, env in enumerate(self.environments) if i not in started]
