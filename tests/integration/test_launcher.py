"""The torchrun launcher on two emulated SageMaker hosts, with real torch DDP over gloo.

Each host is one launcher process with its own SM_CURRENT_HOST. The host names algo-1 / algo-2
resolve to distinct loopback addresses through libnss-wrapper when it is installed; otherwise
the hosts are the address literals 127.0.0.1 / 127.0.0.2.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from smdist.backends.local.hosts.names import HostNames
from smdist.backends.local.hosts.shared.ports import free_ports
from smdist.packaging.bundle import entry_points_dir
from smdist.runtime import launcher

pytestmark = [pytest.mark.integration, pytest.mark.torch]

# The installed package's ready scripts (the source tree's under an editable install): a run
# against an installed wheel (.ci/wheel-check) exercises the wheel's own files.
LAUNCHER = entry_points_dir() / "launch_torchrun.py"
RUN_TIMEOUT_S = 240

TRAINING_SCRIPT = """
import json, os, sys, time
from pathlib import Path

out = Path(os.environ["LAUNCHER_TEST_OUT"])
restart_count = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
if "--fail_first_attempt" in sys.argv and restart_count == 0:
    # Before torch is imported: the failed attempt costs no import.
    sys.exit("failing on purpose so that torchrun restarts the workers")

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world_size = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
(out / f"rank{rank}.json").write_text(json.dumps({
    "rank": rank,
    "world_size": world_size,
    "local_rank": int(os.environ["LOCAL_RANK"]),
    "sum": total.item(),
    "argv": sys.argv[1:],
    "pid": os.getpid(),
    "restart_count": restart_count,
    "host": os.environ["SM_CURRENT_HOST"],
}))
if "--keep_running" in sys.argv:
    # Stay in the collective until stopped: a vanished peer breaks the next all_reduce.
    while True:
        dist.all_reduce(torch.ones(1))
        time.sleep(0.05)
dist.destroy_process_group()
"""


def free_port() -> int:
    return free_ports(1)[0]


def emulated_hosts(tmp_path: Path, count: int) -> tuple[list[str], dict[str, str]]:
    """Host names and the variables that make them resolve."""
    if ctypes.util.find_library("nss_wrapper") is None:
        return [f"127.0.0.{n}" for n in range(1, count + 1)], {}
    hosts_file = tmp_path / "hosts"
    names = HostNames(["algo-1", "algo-2"], ["127.0.0.11", "127.0.0.12"])
    hosts_file.write_text(names.hosts_file_text())
    return ["algo-1", "algo-2"][:count], {
        "LD_PRELOAD": "libnss_wrapper.so",
        "NSS_WRAPPER_HOSTS": str(hosts_file),
    }


def processes_with(marker: str) -> list[int]:
    """Pids whose command line contains ``marker``, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def kill_leftovers(marker: str) -> None:
    for pid in processes_with(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class EmulatedJob:
    """One launcher process per emulated host, sharing a rendezvous port."""

    def __init__(
        self,
        tmp_path: Path,
        hyperparameters: list[str],
        host_count: int = 2,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.marker = f"smdist-launcher-test-{uuid.uuid4().hex}"
        self.code_dir = tmp_path / "code"
        self.code_dir.mkdir()
        (self.code_dir / "train_check.py").write_text(TRAINING_SCRIPT)
        self.out = tmp_path / "out"
        self.out.mkdir()
        self.logs = tmp_path
        hosts, resolver_env = emulated_hosts(tmp_path, host_count)
        self.hosts = hosts
        port = free_port()
        self.processes: list[subprocess.Popen] = []
        for host in hosts:
            env = dict(os.environ)
            env.update(resolver_env)
            env.update(
                {
                    "SM_HOSTS": json.dumps(hosts),
                    "SM_CURRENT_HOST": host,
                    "SM_NUM_GPUS": "0",
                    "SMDIST_RDZV_PORT": str(port),
                    "SMDIST_HOSTS_TIMEOUT_S": "30",
                    "TRAINING_JOB_NAME": self.marker,
                    "LAUNCHER_TEST_OUT": str(self.out),
                    "OMP_NUM_THREADS": "1",
                    "SMDIST_TRAINING_SCRIPT": "train_check.py",
                    **(settings or {}),
                }
            )
            argv = [
                sys.executable,
                str(LAUNCHER),
                *hyperparameters,
                "--marker",
                self.marker,
            ]
            log = open(self.logs / f"{host}.log", "wb")  # noqa: SIM115 - closed in stop()
            self.processes.append(
                subprocess.Popen(
                    argv, cwd=self.code_dir, env=env, stdout=log, stderr=subprocess.STDOUT
                )
            )
            log.close()

    def wait(self, timeout_s: float = RUN_TIMEOUT_S) -> list[int]:
        deadline = time.monotonic() + timeout_s
        return [self.wait_for(p, deadline) for p in self.processes]

    def wait_for(self, process: subprocess.Popen, deadline: float) -> int:
        try:
            return process.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            pytest.fail(f"a launcher did not finish in time:\n{self.logs_text()}")

    def logs_text(self) -> str:
        return "\n".join(
            f"--- {host} ---\n{(self.logs / f'{host}.log').read_text(errors='replace')}"
            for host in self.hosts
        )

    def results(self) -> list[dict]:
        return [json.loads(path.read_text()) for path in sorted(self.out.glob("rank*.json"))]

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        kill_leftovers(self.marker)


@pytest.fixture
def emulated_job(tmp_path):
    jobs: list[EmulatedJob] = []

    def start(
        hyperparameters: list[str], host_count: int = 2, settings: dict[str, str] | None = None
    ) -> EmulatedJob:
        job = EmulatedJob(tmp_path, hyperparameters, host_count, settings)
        jobs.append(job)
        return job

    yield start
    for job in jobs:
        job.stop()


# One job for both: its workers report what they got, then stay in a collective until stopped.
# That two launchers whose workers finish both exit 0 (and leave nothing) is proved by the
# two-host jobs of smdist's torchrun launcher in test_local_backend
# (test_every_strategy_runs_end_to_end[ddp-torchrun-launcher-2hostsx1] and
# test_a_script_written_for_torchrun_runs_unchanged_and_jobs_do_not_collide).
@pytest.mark.smoke
def test_two_hosts_form_one_world_hyperparameters_arrive_untouched_and_sigterm_ends_the_job(
    emulated_job,
):
    quoted = 'it\'s "quoted", with spaces'
    hyperparameters = ["--epochs", "3", "--note", quoted, "--layers", "['a', 'b']"]
    job = emulated_job(
        [*hyperparameters, "--keep_running"], settings={"SMDIST_PROCESSES_PER_HOST": "auto"}
    )
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while len(job.results()) < 2:
        exited = [p.returncode for p in job.processes if p.poll() is not None]
        assert not exited, f"a launcher exited early ({exited}):\n{job.logs_text()}"
        assert time.monotonic() < deadline, f"the workers never started:\n{job.logs_text()}"
        time.sleep(0.2)

    results = job.results()
    assert [r["world_size"] for r in results] == [2, 2], job.logs_text()
    assert sorted(r["rank"] for r in results) == [0, 1]
    assert {r["rank"]: r["host"] for r in results}[0] == job.hosts[0]  # rank 0 on the first host
    assert all(r["local_rank"] == 0 for r in results)
    assert all(r["sum"] == 3.0 for r in results)  # 1 + 2: the all_reduce crossed both hosts
    expected_args = [*hyperparameters, "--keep_running", "--marker", job.marker]
    assert all(r["argv"] == expected_args for r in results)

    # SIGTERM to a launcher ends its workers and the job.
    worker_pids = [r["pid"] for r in results]
    assert all(Path(f"/proc/{pid}").exists() for pid in worker_pids)
    first, second = job.processes
    first.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    first_code = job.wait_for(first, deadline)
    # The second host's worker loses its peer in the next all_reduce and fails; its torchrun
    # then exits with that failure.
    second_code = job.wait_for(second, deadline)
    assert first_code == 143, job.logs_text()  # stopped, not failed
    assert second_code not in (0, 143), job.logs_text()  # it lost its peer: a failure
    assert processes_with(job.marker) == [], job.logs_text()


def test_processes_per_host_and_restarts_reach_torchrun(emulated_job):
    job = emulated_job(
        ["--fail_first_attempt"],
        host_count=1,
        settings={"SMDIST_PROCESSES_PER_HOST": "2", "SMDIST_MAX_RESTARTS": "1"},
    )
    assert job.wait() == [0], job.logs_text()
    results = job.results()
    assert [r["world_size"] for r in results] == [2, 2], job.logs_text()
    assert sorted(r["local_rank"] for r in results) == [0, 1]
    assert all(r["restart_count"] == 1 for r in results)  # the first attempt failed
    assert processes_with(job.marker) == []


# The script torchrun runs: when it started, and the exit code it was asked for.
STARTED_AT = """
import os, sys, time
print(f"started {time.time():.6f}", flush=True)
sys.exit(int(os.environ.get("EXIT_WITH", "0")))
"""


def when_ready(tmp_path: Path, port: int, seconds: float, exit_with: int = 0) -> subprocess.Popen:
    """``torchrun_when_ready.py`` waiting for ``port``, then a one-process torchrun job."""
    script = tmp_path / "started_at.py"
    script.write_text(STARTED_AT)
    helper = Path(launcher.__file__).with_name("torchrun_when_ready.py")
    torchrun_args = ["--nnodes", "1", "--nproc_per_node", "1", "--master_port", "0", str(script)]
    return subprocess.Popen(
        [sys.executable, str(helper), "127.0.0.1", str(port), str(seconds), "--", *torchrun_args],
        env={**os.environ, "EXIT_WITH": str(exit_with)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def test_a_later_host_starts_torchrun_once_the_first_hosts_store_answers(tmp_path):
    """Its torchrun would otherwise meet a refused port and back off 250-750 ms."""
    port = free_port()
    process = when_ready(tmp_path, port, seconds=120)
    time.sleep(3)  # torch imported meanwhile: the helper is polling the port
    assert process.poll() is None, process.communicate()[0]
    with socket.create_server(("127.0.0.1", port)):
        opened = time.time()
        output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    started = float(output.split("started ")[1].split()[0])
    assert started > opened, output


def test_torchrun_run_by_the_helper_fails_and_stops_as_torchrun_does(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as server:
        failing = when_ready(tmp_path, server.getsockname()[1], seconds=120, exit_with=3)
        output, _ = failing.communicate(timeout=120)
    assert failing.returncode == 1, output  # torchrun's own exit code for a failed worker
    assert "ChildFailedError" in output and "exitcode  : 3" in output, output
    waiting = when_ready(tmp_path, free_port(), seconds=120)
    time.sleep(1)
    waiting.send_signal(signal.SIGTERM)  # as the launcher forwards it
    assert waiting.wait(timeout=60) == -signal.SIGTERM
    # Nothing answers within the limit: torchrun starts anyway and its own retries take over.
    alone = when_ready(tmp_path, free_port(), seconds=0.5)
    output, _ = alone.communicate(timeout=120)
    assert alone.returncode == 0 and "started " in output, output
