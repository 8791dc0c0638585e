"""Hosts sharing this machine's files and network: plain processes, each host its folder, its
loopback address (named by libnss_wrapper where installed), free ports of its own, and an
``ssh`` stand-in through which mpirun starts the ranks of the hosts after the first."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from smdist.backends.local.hosts.base import HostSet
from smdist.backends.local.hosts.folders import hosts_mapping
from smdist.backends.local.hosts.names import HostNames
from smdist.backends.local.hosts.shared.names import choose_host_names, names_environment
from smdist.backends.local.hosts.shared.ports import free_ports
from smdist.backends.local.hosts.ssh_arguments import HOSTS_VARIABLE
from smdist.backends.local.processes.environment import JobSettings, write_environment_files
from smdist.contract.commands import HostPorts

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.preparation.layout import LocalLayout
    from smdist.backends.local.processes.host_command import HostCommand

SSH_STAND_IN = Path(__file__).with_name("ssh_stand_in.py")


class SharedMachineHosts(HostSet):
    """Host commands as plain processes of this machine."""

    def __init__(self, notes: tuple[str, ...] = ()) -> None:
        self.notes = notes

    def names(self, count: int) -> HostNames:
        return choose_host_names(count)

    def job_settings(
        self, common: dict[str, Any], layout: LocalLayout, names: HostNames, job_dir: Path
    ) -> JobSettings:
        """Every worker and server binds 0.0.0.0:<port>: each host gets ports of its own."""
        ports = free_ports(1 + 2 * layout.hosts)
        hosts_file = job_dir / "nss_hosts"
        hosts_file.write_text(names.hosts_file_text())
        return JobSettings(
            **common,
            master_port=ports[0],
            names_environment=names_environment(names, hosts_file),
            ports=HostPorts(ports[1 : 1 + layout.hosts], ports[1 + layout.hosts :]),
        )

    def mpirun_client(
        self,
        hosts: list[EmulatedHost],
        environments: list[dict[str, str]],
        layout: LocalLayout,
        bin_dir: Path,
        python: str,
    ) -> tuple[dict[str, str], Path]:
        """The first host's environment as mpirun's own, and the ssh stand-in it starts ranks
        through: each host's environment written to a file, the host map the stand-in reads,
        and ``bin_dir`` (which holds the stand-in) first on PATH."""
        main_env = dict(environments[0])
        main_env["PATH"] = f"{bin_dir}:{main_env.get('PATH', '')}"
        main_env.setdefault("LD_LIBRARY_PATH", "")  # the runners export it by name
        files = write_environment_files(bin_dir, hosts, environments, main_env)
        main_env[HOSTS_VARIABLE] = hosts_mapping(hosts, layout.host_gpus, files)
        return main_env, write_ssh_stand_in(bin_dir, python)

    def spawn(
        self, command: HostCommand, argv: list[str], output: IO[bytes] | int
    ) -> subprocess.Popen:
        return subprocess.Popen(
            argv, cwd=command.cwd, env=command.env, stdin=subprocess.DEVNULL, stdout=output,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def signal_pid(self, process: subprocess.Popen) -> int | None:
        return process.pid

    def parent_pid(self) -> int:
        return os.getpid()


def write_ssh_stand_in(bin_dir: Path, python: str) -> Path:
    """``<bin_dir>/ssh``: mpirun's plm_rsh_agent (and first on PATH for anything else)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "ssh"
    path.write_text(
        f'#!/bin/sh\nexec {shlex.quote(python)} -S -E {shlex.quote(str(SSH_STAND_IN))} "$@"\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path
