"""Emulated hosts that are hosts: scripts written for SageMaker's containers, unchanged, on 2
emulated hosts each in Linux namespaces of its own (``/opt/ml`` at its real path, hostname
``algo-K``, its own network and ports). Hosts that share this machine (``--no-namespaces``),
and the log line saying what that does not reproduce, are test_file_system_channels'
sharing-this-machine case.

The scripts (``user_scripts/``): ``opt_ml_paths`` writes its model, checkpoints and TensorBoard
files by literal ``/opt/ml`` path, and scratch in ``/tmp`` and ``/dev/shm``; ``tf_own_config``
builds its own TF_CONFIG on one fixed port;
``same_port`` serves on one fixed port on every host and fetches from this machine.

Only ``tf_own_config`` imports its framework (TensorFlow is its point). The others are plain
Python: ``opt_ml_paths`` under torchrun (2 hosts x 2 processes, a real launch of that shape),
``same_port`` under torchrun where the hosts are made in a user namespace and else under the
plain one-process-per-host launch, since the hosts' files and network are what they show."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import assert_nothing_left, smdist_run, tar_names

from smdist.backends.local.hosts.choice import NO_ROUTE
from smdist.backends.local.hosts.namespaced import probe
from smdist.backends.local.hosts.namespaced.probe import FORCE_USER_NAMESPACE, namespace_support
from smdist.backends.local.hosts.namespaced.switch import router_path

pytestmark = [
    pytest.mark.integration,
    pytest.mark.torch,
    pytest.mark.skipif(
        namespace_support().mode is None, reason=f"no namespaces: {namespace_support().problem}"
    ),
]

SCRIPTS = Path(__file__).resolve().parent / "user_scripts"
OPT_ML = Path("/opt/ml")
DDP = {"kind": "pytorch_ddp", "launcher": "torchrun"}
# One plain process per host, no launcher that imports a framework (the script imports none).
ONE_PER_HOST = {"kind": "mwms"}
TWO_BY_TWO = ("--hosts", "2", "--processes-per-host", "2")


def write_job(directory: Path, script: str, strategy: dict, **extra: Any) -> Path:
    job = {
        "name": script.replace("_", "-"),
        "strategy": strategy,
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "code": {"source_dir": str(directory / script), "entry_point": "train.py"},
        **extra,
    }
    if not (directory / script).exists():
        shutil.copytree(SCRIPTS / script, directory / script)
    path = directory / f"{script}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def machine_opt_ml() -> list[str] | None:
    """What this machine's /opt/ml holds (None: there is none)."""
    if not OPT_ML.exists():
        return None
    return sorted(str(path) for path in OPT_ML.rglob("*"))


def host_runs(job_name: str) -> list[str]:
    return [str(path) for path in Path(tempfile.gettempdir()).glob(f"smdist-{job_name}-*")]


def assert_no_trace(run, tmp_path: Path, opt_ml_before: list[str] | None) -> None:
    """Nothing written to this machine's /opt/ml, nothing mounted, running or left over."""
    assert machine_opt_ml() == opt_ml_before
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(tmp_path) not in mounts and "/opt/ml" not in mounts
    assert_nothing_left(tmp_path)
    assert host_runs(run.job_dir().name) == []


def test_a_script_that_writes_by_literal_opt_ml_paths(tmp_path):
    before = machine_opt_ml()
    checkpoint = {"s3_uri": "s3://bucket/checkpoints/opt-ml-paths"}
    job = write_job(tmp_path, "opt_ml_paths", DDP, checkpoint=checkpoint)
    # Plain ranks under torchrun: no rank imports torch, so none can abort at its exit.
    run = smdist_run(job, tmp_path, *TWO_BY_TWO, timeout=240)
    assert run.returncode == 0, run.output
    hosts = run.job_dir() / "hosts"
    model = run.job_dir() / "output" / "model.tar.gz"
    assert sorted(set(tar_names(model)) - {"."}) == [f"rank-{rank}.pt" for rank in range(4)]
    for rank, host in ((0, "algo-1"), (1, "algo-1"), (2, "algo-2"), (3, "algo-2")):
        assert f"rank {rank} on {host} saved /opt/ml/model/rank-{rank}.pt" in run.output
        assert (hosts / host / "model" / f"rank-{rank}.pt").is_file()
    for host in ("algo-1", "algo-2"):  # folders the script made itself, in its host's /opt/ml
        assert (hosts / host / "output" / "tensorboard" / f"events.{host}").is_file()
    for host, ranks in (("algo-1", [0, 1]), ("algo-2", [2, 3])):  # each host's /tmp its own
        for scratch in ("/tmp", "/dev/shm"):
            assert f"{host}: {scratch}/opt-ml-paths-ranks holds ranks {ranks}" in run.output
            assert not Path(scratch, "opt-ml-paths-ranks").exists()  # nor this machine's
    store = tmp_path / ".smdist" / "checkpoints" / "opt-ml-paths"
    assert sorted(path.name for path in store.iterdir()) == ["checkpoint-0.pt", "checkpoint-2.pt"]
    assert_no_trace(run, tmp_path, before)


@pytest.mark.tf
def test_a_tensorflow_script_with_its_own_tf_config_on_one_fixed_port(tmp_path):
    # Found, not imported: importing it here would cost as much as a worker does.
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed")
    before = machine_opt_ml()
    job = write_job(tmp_path, "tf_own_config", {"kind": "mwms"})
    run = smdist_run(job, tmp_path, "--hosts", "2", timeout=300)  # MWMS: one worker per host
    assert run.returncode == 0, run.output
    for index, host in enumerate(("algo-1", "algo-2")):
        assert f"{host}: trained as worker {index} of 2 on port 2222" in run.output
    model = run.job_dir() / "output" / "model.tar.gz"
    assert {"algo-1.keras", "algo-2.keras"} <= set(tar_names(model))
    assert_no_trace(run, tmp_path, before)


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the handler's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from this machine")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def machine_server():
    """An HTTP server on this machine's own (non-loopback) address; its URL."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: the route's source address
        except OSError:
            pytest.skip("this machine has no route off itself")
        address = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("this machine has no address but loopback")
    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://{address}:{server.server_address[1]}/"
    server.shutdown()


def answers(output: str) -> dict[str, dict[str, str]]:
    return {
        match[1]: json.loads(match[2])
        for match in re.finditer(r"(algo-\d rank \d+): answers (\{.*?\})", output)
    }


def test_the_same_port_on_every_host_and_this_machines_network(tmp_path, machine_server):
    before = machine_opt_ml()
    hyperparameters = {"fetch": machine_server}
    job = write_job(tmp_path, "same_port", ONE_PER_HOST, hyperparameters=hyperparameters)
    run = smdist_run(job, tmp_path, "--hosts", "2", timeout=240)
    assert run.returncode == 0, run.output
    every_host = {"algo-1": "algo-1", "algo-2": "algo-2"}  # each host's gethostname()
    assert len(answers(run.output)) == 2 and all(
        found == every_host for found in answers(run.output).values()
    ), run.output
    if router_path() is None:
        assert NO_ROUTE in run.output
        assert "algo-1: could not fetch" in run.output
    else:
        for host in ("algo-1", "algo-2"):
            assert f"{host}: fetched hello from this machine" in run.output, run.output
    assert_no_trace(run, tmp_path, before)


# A rank of a bare MPI program, in Python through ctypes (mpi4py is rarely installed): Open MPI's
# own MPI_Init, where a rank finds its local rank through its mpirun's session directory in
# /tmp, then an allreduce over both ranks; it holds its MPI session for a few seconds, as a
# rank that imports its framework and trains does, so that the two jobs' mpiruns overlap.
MPI_SCRIPT = """
import ctypes, ctypes.util, sys, time

mpi = ctypes.CDLL(ctypes.util.find_library("mpi") or "libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
if mpi.MPI_Init(None, None) != 0:
    sys.exit("MPI_Init failed")
world = ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_comm_world"))
rank, size, total = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
mpi.MPI_Comm_rank(ctypes.c_void_p(world), ctypes.byref(rank))
mpi.MPI_Comm_size(ctypes.c_void_p(world), ctypes.byref(size))
time.sleep(4)
one = ctypes.c_int(1)
mpi.MPI_Allreduce(
    ctypes.byref(one), ctypes.byref(total), 1,
    ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_int"))),
    ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_op_sum"))),
    ctypes.c_void_p(world),
)
print(f"mpi rank {rank.value} of {size.value}: allreduce {total.value}", flush=True)
mpi.MPI_Finalize()
"""


@pytest.mark.horovod
def test_two_jobs_at_once_each_with_its_own_algo_1(tmp_path):
    """Two MPI jobs at the same time: both have an ``algo-1`` whose mpirun has the same PID in
    its host's PID namespace, so what Open MPI names after them in ``/tmp`` would collide on a
    shared one (``getting local rank failed``). Each host's ``/tmp`` is its own. The ranks are
    a bare MPI program (Open MPI is what is shared, not the framework): Horovod itself runs
    under mpirun in test_user_scripts (horovod_mpi) and test_horovod_entry_points."""
    # Found, not imported: importing it would import torch here, for nothing.
    if importlib.util.find_spec("horovod.torch") is None:
        pytest.skip("horovod.torch is not installed")
    jobs = []
    for name in ("first", "second"):
        folder = tmp_path / name
        (folder / "mpi_ranks").mkdir(parents=True)
        (folder / "mpi_ranks" / "train.py").write_text(MPI_SCRIPT)
        strategy = {"kind": "horovod", "framework": "pytorch"}
        jobs.append((write_job(folder, "mpi_ranks", strategy), folder))
    with ThreadPoolExecutor(2) as pool:
        one_host_two_ranks = ("--hosts", "1", "--processes-per-host", "2")
        runs = list(pool.map(lambda job: smdist_run(*job, *one_host_two_ranks), jobs))
    for run, (_, folder) in zip(runs, jobs, strict=True):
        assert run.returncode == 0, run.output
        for rank in range(2):
            assert f"mpi rank {rank} of 2: allreduce 2" in run.output, run.output
        assert_nothing_left(folder)


def test_network_isolation_leaves_the_hosts_only_each_other(tmp_path, machine_server):
    hyperparameters = {"fetch": machine_server}
    network = {"isolation": True}
    job = write_job(
        tmp_path, "same_port", ONE_PER_HOST, hyperparameters=hyperparameters, network=network
    )
    run = smdist_run(job, tmp_path, "--hosts", "2", timeout=240)
    assert run.returncode == 0, run.output
    assert len(answers(run.output)) == 2, run.output
    for host in ("algo-1", "algo-2"):
        assert f"{host}: could not fetch" in run.output
    assert NO_ROUTE not in run.output  # isolation is asked for, not a missing helper
    assert_nothing_left(tmp_path)


def test_hosts_made_in_a_user_namespace_run_the_job(tmp_path):
    """The way without root: every host in one user namespace of the job's (forced here, as
    root, where the Python that runs the job is one an unprivileged user may not execute)."""
    job = write_job(tmp_path, "same_port", DDP)
    forced = {FORCE_USER_NAMESPACE: "1"}
    run = smdist_run(job, tmp_path, *TWO_BY_TWO, "--namespaces", timeout=240, env=forced)
    assert run.returncode == 0, run.output
    assert len(answers(run.output)) == 4, run.output
    assert_nothing_left(tmp_path)
    assert host_runs(run.job_dir().name) == []


def test_an_unprivileged_user_is_offered_user_namespaces():
    """What an unprivileged user's smdist finds here: the probe, run as ``nobody`` by the
    system's Python (it needs only the standard library)."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or python is None:
        pytest.skip("needs root (to become nobody) and a system python3")
    source = Path(probe.__file__)
    code = (
        "import importlib.util as u, sys; "
        f"s = u.spec_from_file_location('probe', {str(source)!r}); m = u.module_from_spec(s); "
        "sys.modules['probe'] = m; s.loader.exec_module(m); print(m.namespace_support())"
    )
    done = subprocess.run(
        ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--",
         python, "-c", code],
        cwd="/", env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = done.stdout.strip()
    refused = "unprivileged user namespaces, which this kernel refused" in found
    assert found == f"Support(mode='{probe.USER}', problem=None)" or refused, found


# In a process of its own, as in a notebook that goes on after the error: preparation fails
# after the job's thread began making the hosts' network (the channel copy runs out of disk).
FAILED_PREPARATION = """
import errno, json, os, sys, threading
from pathlib import Path
import smdist
from smdist.backends.local.preparation import files as preparation

def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")

preparation.stage_channels = full_disk
try:
    smdist.fit(sys.argv[1], backend="local", options={
        "root": sys.argv[2], "hosts": 2, "processes_per_host": 1, "namespaces": True})
except Exception as error:
    failure = f"{type(error).__name__}: {error}"
else:
    failure = None
children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
print(json.dumps({"failure": failure, "children": children,
                  "threads": [thread.name for thread in threading.enumerate()]}))
"""


def test_a_preparation_that_fails_after_the_network_began_leaves_nothing(tmp_path):
    """The job's thread makes the hosts' network while the code and channels are copied; when
    the copy fails, the caller gets the error with no thread, process or run folder left."""
    job = write_job(tmp_path, "same_port", DDP)
    probe_run = subprocess.run(
        [sys.executable, "-c", FAILED_PREPARATION, str(job), str(tmp_path / ".smdist")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert probe_run.returncode == 0, probe_run.stderr
    seen = json.loads(probe_run.stdout.splitlines()[-1])
    assert seen["failure"] and "No space left on device" in seen["failure"], seen
    assert seen["children"] == [] and seen["threads"] == ["MainThread"], seen
    [job_dir] = (tmp_path / ".smdist" / "jobs").iterdir()
    assert json.loads((job_dir / "job.json").read_text())["status"] == "Failed"
    assert host_runs(job_dir.name) == []
    assert_nothing_left(tmp_path)
