"""A real Slurm on this machine for the hyperpod-slurm tests: one slurmctld and one slurmd per
node, on free ports, in a folder of the test's own; stopped by the pids their pid files name.

The nodes share this machine's network: ``node1``, ``node2`` ... are Slurm's names for
127.0.0.11, 127.0.0.12 ... (each slurmd on a port of its own), and libnss_wrapper makes the
names resolve for the job's processes (``NSS_WRAPPER_HOSTS``), as a cluster's DNS resolves its
node names. No munge, no accounting (``sacct`` says "accounting storage is disabled").

Every daemon carries its test process's pid (``OWNER``): a stand whose run was killed before it
could stop its daemons is ended by the next stand that starts.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from smdist.backends.local.hosts.names import HostNames
from smdist.backends.local.hosts.shared.ports import free_ports

PROGRAMS = ("slurmctld", "slurmd", "sbatch", "srun", "scontrol", "squeue", "scancel", "sinfo")
REPO = Path(__file__).resolve().parents[2]
FIRST_ADDRESS = 11
OWNER = "SMDIST_SLURM_STAND_OWNER"
CPUS_PER_NODE = 2

# KillWait: SIGKILL 2 s after a job's SIGTERM (scancel, requeue): a job that ignores SIGTERM
# (the stop test's) ends as it would on a cluster, without 10 s of waiting.
CONFIG = """\
ClusterName={cluster}
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool-%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd-%n.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=2
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd-%n.log
{nodes}
PartitionName=train Nodes={names} Default=YES MaxTime=INFINITE State=UP
"""
NODE = (
    "NodeName={name} NodeHostname=localhost NodeAddr={address} Port={port} "
    "CPUs={cpus} RealMemory=2000 State=UNKNOWN"
)


def missing_programs() -> list[str]:
    return [program for program in PROGRAMS if shutil.which(program) is None]


class SlurmStand:
    """A Slurm cluster of ``nodes`` nodes in ``folder``; ``start`` then ``stop``."""

    def __init__(self, folder: Path, nss_wrapper: str, nodes: int = 2) -> None:
        self.folder = folder
        self.names = [f"node{index + 1}" for index in range(nodes)]
        self.addresses = [f"127.0.0.{FIRST_ADDRESS + index}" for index in range(nodes)]
        self.conf = folder / "slurm.conf"
        self.hosts_file = folder / "nss_hosts"
        self.env = {
            **os.environ,
            "SLURM_CONF": str(self.conf),
            "LD_PRELOAD": nss_wrapper,
            "NSS_WRAPPER_HOSTS": str(self.hosts_file),
            OWNER: str(os.getpid()),
        }

    def write_config(self) -> None:
        for name in ("state", "log", *(f"spool-{n}" for n in self.names)):
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        ctld, slurmd, *node_ports = free_ports(2 + len(self.names))
        nodes = [
            NODE.format(name=name, address=address, port=port, cpus=CPUS_PER_NODE)
            for name, address, port in zip(self.names, self.addresses, node_ports, strict=True)
        ]
        self.conf.write_text(
            CONFIG.format(
                cluster=f"smdist{ctld}",
                ctld_port=ctld,
                slurmd_port=slurmd,
                dir=self.folder,
                nodes="\n".join(nodes),
                names=",".join(self.names),
            )
        )
        self.hosts_file.write_text(HostNames(self.names, self.addresses).hosts_file_text())

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def start(self) -> None:
        end(orphaned())
        self.write_config()
        self._daemon("slurmctld", "-c", "-f", str(self.conf))
        for name in self.names:
            self._daemon("slurmd", "-f", str(self.conf), "-N", name)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = self.run("sinfo", "-h", "-N", "-o", "%T").stdout.split()
            if len(states) == len(self.names) and all(s == "idle" for s in states):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the test Slurm's nodes did not come up: {self.logs_tail()}")

    def _daemon(self, *argv: str) -> None:
        done = self.run(*argv, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} did not start: {done.stderr} {self.logs_tail()}")

    def logs_tail(self) -> str:
        texts = []
        for log in sorted((self.folder / "log").glob("*.log")):
            texts.append(f"{log.name}: {log.read_text(errors='replace')[-1500:]}")
        return "\n".join(texts)

    def pids(self) -> list[int]:
        found = []
        for pid_file in self.folder.glob("*.pid"):
            text = pid_file.read_text().strip()
            if text.isdigit():
                found.append(int(text))
        return found

    def stop(self) -> None:
        """Cancel every job, wait for them to end, then end the daemons by their pids."""
        jobs = self.run("squeue", "-h", "-o", "%i").stdout.split()
        if jobs:
            self.run("scancel", "--full", *jobs)
            deadline = time.monotonic() + 60
            while self.run("squeue", "-h", "-o", "%i").stdout.split():
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)
        pids = self.pids()
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in pids:
            _signal(pid, signal.SIGKILL)


def leftovers(marker: str) -> list[int]:
    """Processes whose command line names ``marker`` (the stand's folder): what a job left."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            found.append(int(entry.name))
    return found


def orphaned() -> list[int]:
    """Processes of stands whose test process is gone (a killed run's daemons and jobs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        prefix = f"{OWNER}=".encode()
        owners = [item[len(prefix) :] for item in environ if item.startswith(prefix)]
        if owners and owners[0].isdigit() and not _alive(int(owners[0])):
            found.append(int(entry.name))
    return found


def end(pids: list[int]) -> None:
    for pid in pids:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
