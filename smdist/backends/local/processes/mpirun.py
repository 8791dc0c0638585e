"""The one ``mpirun`` that spans the emulated hosts (``mpi`` and ``smdistributed.dataparallel``):
its launching host's environment, the ssh stand-in it reaches the other hosts through, and its
argv, one application context per host.

The ranks run ``python <program>`` rather than the container's ``python -m mpi4py <program>``
(mpi4py is rarely installed locally); a rank that raises still ends the job, through mpirun's
``orte_abort_on_non_zero_status``. A rank on another host starts from that host's own
environment (a SageMaker worker's ssh login reads the ``/etc/environment`` it wrote); what
mpirun exports overrides it: under the MPIRunner, the launching host's ``SM_*`` values, with
paths pointing into the rank's own host directory (which is what ``/opt/ml/...`` means on each
real host). One mpirun application context per host carries that host's working directory,
values and arguments (built from that host's own configuration).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.hosts.ssh_arguments import HOSTS_VARIABLE
from smdist.contract.commands import Image, Launch, Launcher, mpi_command

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost


def map_host_directory(value: str, main_base: str, host_base: str) -> str:
    """A launching-host value with its directory replaced by ``host_base`` (whole components).

    On SageMaker every host's ``/opt/ml`` is the same path on its own disk; here each host has
    its own directory, so a path the launching host exports must name the rank's host's.
    Applied to single variable values, never to command text.
    """
    if main_base == host_base or main_base not in value:
        return value
    return re.sub(re.escape(main_base) + r"(?=[/\s\"':,;=]|$)", host_base, value)


def _host_exports(
    main_env: Mapping[str, str], main: EmulatedHost, host: EmulatedHost, gpus: list[str]
) -> list[str]:
    """``NAME=value`` exports for one host: the launching host's values, its paths mapped."""
    exports = []
    main_base = str(main.base)
    for name in sorted(main_env):
        value = main_env[name]
        if name == HOSTS_VARIABLE:
            continue  # the host map itself names every host's directory: it stays as it is
        if name.startswith("SM_") or main_base in value:
            exports.append(f"{name}={map_host_directory(value, main_base, str(host.base))}")
    exports.append(f"CUDA_VISIBLE_DEVICES={','.join(gpus)}")
    return exports


def _emulation_flags(ssh: Path) -> list[str]:
    """What the emulation adds to mpirun: remote starts go through the ssh stand-in; a daemon
    that never calls back fails the launch, not hangs it."""
    return ["-mca", "plm_rsh_agent", str(ssh), "-mca", "orte_startup_timeout", "120"]


def _host_contexts(
    hosts: list[EmulatedHost],
    per_host: int,
    exports: list[list[str]],
    programs: list[list[str]],
) -> list[str]:
    """mpirun's per-host contexts (``A : B``): each host its ranks, its own code directory (the
    hosts' ``/opt/ml`` differ here), its exports and its program's argv."""
    command: list[str] = []
    for index, host in enumerate(hosts):
        if index:
            command.append(":")
        command += ["-np", str(per_host), "-host", f"{host.name}:{per_host}"]
        command += ["-wdir", str(host.code)]
        for export in exports[index]:
            command += ["-x", export]
        command += programs[index]
    return command


def local_mpirun(
    launch: Launch,
    image: Image,
    hosts: list[EmulatedHost],
    main_env: Mapping[str, str],
    host_arguments: list[list[str]],
    *,
    program: str,
    ssh: Path,
    host_gpus: list[list[str]],
) -> list[str]:
    """The runner's one mpirun (``host_commands``), spread over per-host contexts.

    The runner's flags and exports stay as they are; the emulation adds its own flags, and
    under the MPIRunner each host's ``SM_*`` values (its paths) where SageMaker exports the
    names. ``host_arguments``: each host's script arguments.
    """
    commands = [mpi_command(launch, image, program, arguments) for arguments in host_arguments]
    flags, exports = commands[0].flags_and_exports()
    if "--oversubscribe" not in flags:  # the SMDataParallelRunner's flags have it
        flags = ["--oversubscribe", *flags]  # the emulated hosts share this machine's cores
    command = ["mpirun", "--host", commands[0].host_list, *flags, *_emulation_flags(ssh)]
    if launch.launcher is Launcher.SMDDP:  # the SMDataParallelRunner exports no SM_* variable
        per_host_exports = [exports] * len(hosts)
    else:
        per_host_exports = [
            exports + _host_exports(main_env, hosts[0], host, host_gpus[host.index])
            for host in hosts
        ]
    programs = [built.program for built in commands]
    return command + _host_contexts(hosts, launch.processes_per_host, per_host_exports, programs)
