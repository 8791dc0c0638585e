"""What a script in an emulated host can and cannot do, as in a SageMaker container: each test
runs a real 2-host job whose script records, from inside its host, what it found.

- every host sees the same folders of this machine's ``/tmp`` that the job's search paths
  name (a package on ``PYTHONPATH`` there imports on every host, under mpirun as under
  torchrun);
- the processes have a Docker container's default capabilities: no remount of a read-only
  channel, no bind mount over ``/opt/ml``, and training itself still works;
- each host has its own ``/etc/hosts``: a line algo-1 adds is not algo-2's, nor this
  machine's.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import assert_nothing_left, smdist_run, tar_names

from smdist.backends.local.hosts.namespaced.probe import FORCE_USER_NAMESPACE, namespace_support
from smdist.backends.local.hosts.namespaced.switch import host_address

pytestmark = [
    pytest.mark.integration,
    pytest.mark.torch,
    pytest.mark.skipif(
        namespace_support().mode is None, reason=f"no namespaces: {namespace_support().problem}"
    ),
]

# (strategy, instance type): ranks under one mpirun that reaches algo-2 over ssh, and torchrun
# on every host.
MPIRUN = ({"kind": "sddp"}, "ml.p4d.24xlarge")
TORCHRUN = ({"kind": "pytorch_ddp", "launcher": "torchrun"}, "ml.c5.xlarge")
ONE_RANK_PER_HOST = ("--hosts", "2", "--processes-per-host", "1")
# Docker's default capabilities (CHOWN ... SETFCAP), as /proc/<pid>/status shows them.
CONTAINER_CAPABILITIES = "00000000a80425fb"

# Every script starts so: its rank, its host, and ``record``, which writes what it found.
RANK = """
import json, os, socket
rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ["RANK"]
host = socket.gethostname()

def record(name, found):
    with open(f"/opt/ml/output/data/{name}-{rank}.json", "w") as handle:
        json.dump({"host": host, **found}, handle)
"""

IMPORTS_FROM_TMP = """
try:
    import lent_module
    imported = lent_module.WHERE
except ModuleNotFoundError as error:
    imported = f"missing: {error}"
record("lent", {"pythonpath": os.environ["PYTHONPATH"], "imported": imported})
"""

TRIES_TO_MOUNT = """
import ctypes, subprocess
from pathlib import Path
MS_REMOUNT, MS_BIND = 32, 4096
libc = ctypes.CDLL(None, use_errno=True)
channel = os.environ["SM_CHANNEL_TRAIN"]

def mounted(source, target, flags):
    done = libc.mount(source.encode(), target.encode(), None, flags, None)
    return 0 if done == 0 else ctypes.get_errno()

remount = mounted("none", channel, MS_REMOUNT | MS_BIND)
if remount == 0:  # writable now: the user's dataset
    Path(channel, "data.txt").write_text(f"overwritten by {host}")
bind = mounted("/", "/opt/ml/model", MS_BIND)
if bind == 0:
    libc.umount2(b"/opt/ml/model", 2)
command = subprocess.run(["mount", "-o", "remount,bind,rw", channel], capture_output=True)
status = dict(line.split(":\\t", 1) for line in Path("/proc/self/status").read_text().splitlines()
              if line.startswith("Cap"))
Path(f"/opt/ml/model/model-{rank}.txt").write_text("trained")
record("mounts", {
    "read": Path(channel, "data.txt").read_text(), "remount": remount, "bind": bind,
    "mount_command": command.returncode, "effective": status["CapEff"],
    "bounding": status["CapBnd"], "inheritable": status["CapInh"],
})
"""

EDITS_ETC_HOSTS = """
import torch.distributed as dist
dist.init_process_group("gloo")
if host == "algo-1":
    with open("/etc/hosts", "a") as hosts:
        hosts.write("10.0.0.99 algo-2 moved-host\\n")
dist.barrier()  # algo-1 has written its line

def resolved(name):
    try:
        return socket.gethostbyname(name)
    except OSError:
        return None

record("hosts", {"algo-2": resolved("algo-2"), "moved-host": resolved("moved-host"),
                 "lines": open("/etc/hosts").read().splitlines()})
dist.barrier()
dist.destroy_process_group()
"""


def write_job(
    directory: Path, name: str, script: str, strategy: tuple[dict, str], **extra: Any
) -> Path:
    source = directory / "src"
    source.mkdir()
    (source / "train.py").write_text(RANK + script)
    kind, instance_type = strategy
    job = {
        "name": name,
        "strategy": kind,
        "cluster": {"instance_type": instance_type, "instance_count": 2},
        "code": {"source_dir": str(source), "entry_point": "train.py"},
        **extra,
    }
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def records(run, name: str) -> list[dict]:
    found = sorted((run.job_dir() / "hosts").glob(f"*/output/data/{name}-*.json"))
    return [json.loads(path.read_text()) for path in found]


@pytest.fixture
def package_in_tmp() -> Iterator[Path]:
    """A folder of this machine's /tmp of its own (not the test's), holding ``lent_module``."""
    top = Path(tempfile.mkdtemp(prefix="lent-package-", dir="/tmp"))
    try:
        (top / "extra").mkdir()
        (top / "extra" / "lent_module.py").write_text(f"WHERE = {str(top)!r}\n")
        yield top / "extra"
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("strategy", [MPIRUN, TORCHRUN], ids=["mpirun", "torchrun"])
def test_every_host_sees_the_folders_of_tmp_on_its_search_paths(tmp_path, package_in_tmp, strategy):
    environment = {"PYTHONPATH": str(package_in_tmp)}
    job = write_job(tmp_path, "lent", IMPORTS_FROM_TMP, strategy, environment=environment)
    run = smdist_run(job, tmp_path, *ONE_RANK_PER_HOST, timeout=240)
    assert run.returncode == 0, run.output
    seen = records(run, "lent")
    assert sorted(found["host"] for found in seen) == ["algo-1", "algo-2"], run.output
    for found in seen:
        assert str(package_in_tmp) in found["pythonpath"].split(":"), found
        assert found["imported"] == str(package_in_tmp.parent), found
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize(
    "made", [{}, {FORCE_USER_NAMESPACE: "1"}], ids=["as-root", "in-a-user-namespace"]
)
def test_a_script_has_a_containers_capabilities_and_cannot_mount(tmp_path, made):
    data = tmp_path / "data"
    data.mkdir()
    (data / "data.txt").write_text("the user's dataset")
    inputs = {"train": data.as_uri()}
    job = write_job(tmp_path, "capabilities", TRIES_TO_MOUNT, MPIRUN, inputs=inputs)
    run = smdist_run(job, tmp_path, *ONE_RANK_PER_HOST, "--namespaces", timeout=240, env=made)
    assert run.returncode == 0, run.output
    assert (data / "data.txt").read_text() == "the user's dataset"
    seen = records(run, "mounts")
    assert sorted(found["host"] for found in seen) == ["algo-1", "algo-2"], run.output
    eperm = 1
    for found in seen:
        assert found["read"] == "the user's dataset", found
        assert (found["remount"], found["bind"]) == (eperm, eperm), found
        assert found["mount_command"] != 0, found
        assert found["effective"] == found["bounding"] == CONTAINER_CAPABILITIES, found
        assert found["inheritable"] == "0000000000000000", found
    model = set(tar_names(run.job_dir() / "output" / "model.tar.gz"))
    assert {"model-0.txt", "model-1.txt"} <= {name.removeprefix("./") for name in model}
    assert_nothing_left(tmp_path)


def test_each_host_has_its_own_etc_hosts(tmp_path):
    job = write_job(tmp_path, "etc-hosts", EDITS_ETC_HOSTS, TORCHRUN)
    run = smdist_run(job, tmp_path, *ONE_RANK_PER_HOST, timeout=240)
    assert run.returncode == 0, run.output
    seen = {found["host"]: found for found in records(run, "hosts")}
    assert sorted(seen) == ["algo-1", "algo-2"], run.output
    assert seen["algo-1"]["moved-host"] == "10.0.0.99"  # its own file, as it wrote it
    assert "10.0.0.99 algo-2 moved-host" in seen["algo-1"]["lines"]
    assert "10.0.0.99 algo-2 moved-host" not in seen["algo-2"]["lines"], seen["algo-2"]
    assert seen["algo-2"]["moved-host"] is None, seen["algo-2"]
    for found in seen.values():  # the first line that names it: the job's own
        assert found["algo-2"] == host_address(2), found
    assert "10.0.0.99" not in Path("/etc/hosts").read_text()
    assert_nothing_left(tmp_path)
