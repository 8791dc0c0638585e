"""Run the PyTorch entry points the way SageMaker's containers start them, on this machine.

Two emulated hosts (``127.0.0.1`` and ``127.0.0.2`` as host names) each get their own
``opt/ml``-style directories and the SM_* variables the container toolkit sets. torchrun jobs
start one torchrun per host, as the PyTorch toolkit does (static rendezvous on the first host);
mpirun jobs start one mpirun on the first host that reaches the second through a local stand-in
for ssh, exporting the first host's variables to every rank, as SageMaker's MPI runner does.

Every process of a job carries a marker variable, so cleanup can find and stop all of them
(torchrun's workers live in their own sessions) whatever happened to the launcher.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from multiprocess_runs import ssh_stand_in

from smdist.backends.local.hosts.shared.ports import free_ports
from smdist.packaging.bundle import entry_points_dir

# The installed package's ready scripts (the source tree's under an editable install): a run
# against an installed wheel (.ci/wheel-check) exercises the wheel's own files.
ENTRY_POINTS = entry_points_dir()
HOSTS = ("127.0.0.1", "127.0.0.2")
MARKER = "SMDIST_TEST_JOB"
JOB_TIMEOUT = 180  # seconds for one launch; these jobs take 5-20 s on two busy cores
FAILED_GRACE = 60  # seconds the other launchers get once one has failed (torchrun waits 30)

# Launcher variables of an outer job must not leak into the emulated hosts.
_RENDEZVOUS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE")
_CHECKSUM = re.compile(r"smdist: rank=(\d+) weights_checksum=([0-9a-f]+)")
_METRICS = re.compile(r"\[metrics\] (.*)")
_METRIC_VALUE = re.compile(r"(\w+)=([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))")


def free_port() -> int:
    return free_ports(1)[0]


@dataclass
class Host:
    name: str
    base: Path  # stands in for /opt/ml
    env: dict[str, str]

    @property
    def model_dir(self) -> Path:
        return self.base / "model"

    @property
    def checkpoint_dir(self) -> Path:
        return self.base / "checkpoints"


def sagemaker_hosts(
    root: Path, hyperparameters: dict, hosts: tuple[str, ...] = HOSTS
) -> list[Host]:
    """The SM_* environment of each emulated host, as the SageMaker toolkit writes it."""
    names, hosts = hosts, []
    for name in names:
        base = root / name / "opt" / "ml"
        for sub in ("model", "output/data", "checkpoints", "input/config"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        resource = {"current_host": name, "hosts": list(names), "network_interface_name": "lo"}
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("SM_", "OMPI_", "PMIX_")) and key not in _RENDEZVOUS
        }
        env.update(
            {
                "SM_HOSTS": json.dumps(list(names)),
                "SM_CURRENT_HOST": name,
                "SM_NUM_GPUS": "0",
                "SM_NUM_CPUS": str(os.cpu_count() or 1),
                "SM_MODEL_DIR": str(base / "model"),
                "SM_OUTPUT_DIR": str(base / "output"),
                "SM_OUTPUT_DATA_DIR": str(base / "output" / "data"),
                "SM_CHANNELS": "[]",
                "SM_HPS": json.dumps(hyperparameters),
                "SM_RESOURCE_CONFIG": json.dumps(resource),
                "SM_NETWORK_INTERFACE_NAME": "lo",
                "SM_LOG_LEVEL": "20",
                "SAGEMAKER_BASE_DIR": str(base),
                "OMP_NUM_THREADS": "1",
                "PYTHONUNBUFFERED": "1",
            }
        )
        for key, value in hyperparameters.items():
            env[f"SM_HP_{key.upper()}"] = value if isinstance(value, str) else json.dumps(value)
        hosts.append(Host(name, base, env))
    return hosts


def script_args(hyperparameters: dict) -> list[str]:
    """``--name value`` pairs as the container passes them (value = str() of the value)."""
    args = []
    for key, value in hyperparameters.items():
        args += [f"--{key}", value if isinstance(value, str) else str(value)]
    return args


@dataclass
class Job:
    launchers: list[subprocess.Popen]
    logs: list[Path]
    marker: str
    hosts: list[Host]
    script: str = ""
    # True: SIGTERM goes to the training processes rather than the launcher (see terminate).
    signal_workers: bool = False
    returncodes: list[int | None] = field(default_factory=list)

    @property
    def output(self) -> str:
        return "\n".join(log.read_text(errors="replace") for log in self.logs if log.exists())

    def wait(self, timeout: float = JOB_TIMEOUT) -> Job:
        """Wait for every launcher; a launcher that fails gives the others FAILED_GRACE seconds,
        so a host left waiting on a rendezvous that will never complete ends the job at once
        rather than at the timeout."""
        deadline, reason = time.monotonic() + timeout, f"job did not finish in {timeout} s"
        try:
            while any(launcher.poll() is None for launcher in self.launchers):
                if time.monotonic() > deadline:
                    self._give_up(reason)
                failed = any(launcher.poll() not in (None, 0) for launcher in self.launchers)
                if failed and deadline - time.monotonic() > FAILED_GRACE:
                    deadline = time.monotonic() + FAILED_GRACE
                    reason = f"a launcher failed; the others did not end {FAILED_GRACE} s later"
                time.sleep(0.2)
        finally:
            self.returncodes = [launcher.poll() for launcher in self.launchers]
        return self

    def _give_up(self, reason: str) -> None:
        self.kill()
        raise AssertionError(f"{reason}; output:\n{self.output}")

    def terminate(self) -> None:
        """SIGTERM, as a stopped job's hosts get it.

        torchrun forwards SIGTERM to its workers and waits 30 s for them. mpirun forwards it
        too, but SIGKILLs them one second later (odls_base_sigkill_timeout), so mpirun jobs
        get the signal in their training processes, which then stop together, checkpoint and
        exit 143 before mpirun notices.
        """
        if self.signal_workers:
            for pid in self.training_processes():
                os.kill(pid, signal.SIGTERM)
            return
        for launcher in self.launchers:
            if launcher.poll() is None:
                launcher.send_signal(signal.SIGTERM)

    def training_processes(self) -> list[int]:
        """The job's processes that run the entry point itself (not a launcher or daemon)."""
        found = []
        for pid in processes_with_marker(self.marker):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
            launcher = any(name in arg for arg in argv for name in ("mpirun", "orted", "torch."))
            if not launcher and any(arg.endswith(self.script) for arg in argv):
                found.append(pid)
        return found

    def kill(self) -> None:
        """SIGKILL to every process of the job, launchers and orphaned workers alike."""
        for pid in processes_with_marker(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for launcher in self.launchers:
            launcher.wait(timeout=30)


def processes_with_marker(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"{MARKER}={marker}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as sink:
        return subprocess.Popen(
            command, env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=log.parent
        )


def start_torchrun(root: Path, script: str, hyperparameters: dict, run: str) -> Job:
    """One torchrun per host: ``--nnodes 2 --node_rank i --master_addr <first host>``."""
    hosts = sagemaker_hosts(root, hyperparameters)
    port, marker = free_port(), uuid.uuid4().hex
    launchers, logs = [], []
    for node_rank, host in enumerate(hosts):
        command = [
            sys.executable, "-m", "torch.distributed.run",
            "--nnodes", str(len(hosts)),
            "--nproc_per_node", "1",
            "--node_rank", str(node_rank),
            "--master_addr", hosts[0].name,
            "--master_port", str(port),
            str(ENTRY_POINTS / script),
            *script_args(hyperparameters),
        ]  # fmt: skip
        log = root / f"{run}-{host.name}.log"
        launchers.append(_start(command, {**host.env, MARKER: marker}, log))
        logs.append(log)
    return Job(launchers, logs, marker, hosts, script)


def start_mpirun(root: Path, script: str, hyperparameters: dict, run: str) -> Job:
    """One mpirun on the first host, one rank per host, the first host's variables exported."""
    hosts = sagemaker_hosts(root, hyperparameters)
    agent = ssh_stand_in(root / "ssh") / "ssh"  # mpirun's rsh agent: its daemons start here
    marker = uuid.uuid4().hex
    env = {
        **hosts[0].env,
        MARKER: marker,
        "MASTER_PORT": str(free_port()),
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
    exported = sorted(key for key in env if key.startswith("SM_")) + [
        MARKER, "MASTER_PORT", "PATH", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "SAGEMAKER_BASE_DIR",
    ]  # fmt: skip
    command = [
        "mpirun",
        "--host", ",".join(f"{host.name}:1" for host in hosts),
        "-np", str(len(hosts)),
        "--allow-run-as-root",
        "--mca", "plm_rsh_agent", str(agent),
        "--mca", "btl_tcp_if_include", "lo",
        "--mca", "oob_tcp_if_include", "lo",
        "--mca", "orte_abort_on_non_zero_status", "1",
        "-bind-to", "none", "-map-by", "slot",
        "--tag-output",
        *[item for key in exported for item in ("-x", key)],
        sys.executable, str(ENTRY_POINTS / script),
        *script_args(hyperparameters),
    ]  # fmt: skip
    log = root / f"{run}-mpirun.log"
    return Job([_start(command, env, log)], [log], marker, hosts, script, signal_workers=True)


def metric_lines(output: str) -> list[dict[str, float]]:
    """Every ``[metrics]`` line as numbers (mpirun's --tag-output may glue a tag to its end)."""
    return [
        {name: float(raw) for name, raw in _METRIC_VALUE.findall(match.group(1))}
        for match in _METRICS.finditer(output)
    ]


def checksums(output: str) -> dict[int, str]:
    return {int(rank): digest for rank, digest in _CHECKSUM.findall(output)}


def wait_for_checkpoint(job: Job, directory: Path, timeout: float = JOB_TIMEOUT) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(directory.glob("checkpoint-*.pt"))
        if found:
            return found[-1]
        if any(launcher.poll() is not None for launcher in job.launchers):
            break
        time.sleep(0.2)
    job.kill()
    raise AssertionError(f"no checkpoint appeared in {directory}; output:\n{job.output}")
