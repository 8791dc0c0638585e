"""Every node's first step: the SageMaker contract of the node, from the job's shipped code and
Slurm's names for the nodes, then the command the SageMaker container runs there."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path, PurePosixPath

import smdist
from smdist.backends.hyperpod_slurm import node_start
from smdist.backends.hyperpod_slurm.layout import JobFolder
from smdist.backends.hyperpod_slurm.node_settings import node_settings
from smdist.packaging import bundle

SPEC = {
    "name": "hp-node",
    "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
    "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
    "code": {"framework_version": "2.13.0", "py_version": "py312"},
    "hyperparameters": {"epochs": 2, "layers": [64, 32]},
}
HOSTS = "ip-10-1-0-7,ip-10-1-0-9"


def job_folder(tmp_path: Path, spec: dict) -> tuple[dict, JobFolder]:
    data = tmp_path / "fsx" / "data"
    data.mkdir(parents=True)
    spec = {**spec, "inputs": {"training": {"uri": f"file://{data}"}}}
    plan = smdist.plan(spec)
    folder = JobFolder(PurePosixPath(tmp_path / "jobs"), "hp-node-1")
    for made in folder.made_first():
        Path(made).mkdir(parents=True, exist_ok=True)
    bundle.stage(plan, Path(folder.code))
    settings = node_settings(plan, folder, region="us-west-2", master_port=23456)
    Path(folder.node_settings).write_text(json.dumps(settings))
    return settings, folder


def test_a_node_gets_the_containers_contract_under_slurms_names(tmp_path: Path):
    settings, folder = job_folder(tmp_path, SPEC)
    environ = {"SMDIST_SLURM_HOSTS": HOSTS, "SLURMD_NODENAME": "ip-10-1-0-9", "RANK": "5",
               "SM_HOSTS": "stale", "PATH": "/usr/bin"}  # fmt: skip
    argv, env = node_start.node_command(settings, HOSTS.split(","), "ip-10-1-0-9", environ)
    assert argv[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert argv[3:13] == [
        "--nnodes", "2", "--nproc_per_node", "4", "--master_addr", "ip-10-1-0-7",
        "--master_port", "23456", "--node_rank", "1",
    ]  # fmt: skip
    assert argv[13:] == ["pytorch_ddp.py", "--epochs", "2", "--layers", "[64, 32]"]
    base = Path(folder.hosts) / "ip-10-1-0-9"
    assert json.loads(env["SM_HOSTS"]) == ["ip-10-1-0-7", "ip-10-1-0-9"]
    assert env["SM_CURRENT_HOST"] == "ip-10-1-0-9" and "RANK" not in env
    assert env["SM_MODEL_DIR"] == str(base / "model")
    assert (base / "model").resolve() == Path(folder.model).resolve()
    assert (base / "checkpoints").resolve() == Path(folder.checkpoints).resolve()
    assert Path(env["SM_CHANNEL_TRAINING"]).resolve() == tmp_path / "fsx" / "data"
    assert env["MASTER_ADDR"] == "ip-10-1-0-7" and env["MASTER_PORT"] == "23456"
    assert env["SMDIST_CHECKPOINT_DIR"] == str(folder.checkpoints)
    assert env["FI_PROVIDER"] == "efa"  # the catalogue's EFA, from the contract's one place
    assert env["SM_HP_LAYERS"] == "[64,32]" and env["PATH"] == "/usr/bin"
    resources = json.loads((base / "input" / "config" / "resourceconfig.json").read_text())
    assert resources["current_host"] == "ip-10-1-0-9"
    assert resources["hosts"] == ["ip-10-1-0-7", "ip-10-1-0-9"]


def test_smdists_torchrun_launcher_runs_once_per_node(tmp_path: Path):
    spec = {**SPEC, "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"}}
    settings, _ = job_folder(tmp_path, spec)
    environ = {"SMDIST_SLURM_HOSTS": HOSTS, "SLURMD_NODENAME": "ip-10-1-0-7"}
    argv, env = node_start.node_command(settings, HOSTS.split(","), "ip-10-1-0-7", environ)
    assert argv == [sys.executable, "--", "launch_torchrun.py", "--epochs", "2", "--layers",
                    "[64, 32]"]  # fmt: skip
    assert env["SMDIST_TRAINING_SCRIPT"] == "pytorch_ddp.py"


def test_a_node_that_cannot_start_says_why_and_exits_2(tmp_path: Path):
    _, folder = job_folder(tmp_path, SPEC)
    done = subprocess.run(
        [sys.executable, str(Path(node_start.__file__)), str(folder.path)],
        env={"SMDIST_SLURM_HOSTS": HOSTS, "SLURMD_NODENAME": "elsewhere"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "smdist-node: SLURMD_NODENAME='elsewhere' is none of the job's nodes" in done.stderr
    three = subprocess.run(
        [sys.executable, str(Path(node_start.__file__)), str(folder.path)],
        env={"SMDIST_SLURM_HOSTS": f"{HOSTS},ip-10-1-0-11", "SLURMD_NODENAME": "ip-10-1-0-7"},
        capture_output=True,
        text=True,
    )
    assert three.returncode == 2
    assert "the job's launch does not plan 3 node(s)" in three.stderr


def test_the_node_step_is_standard_library_python_38():
    source = Path(node_start.__file__).read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
            if node.module and node.module.startswith("smdist"):
                assert node.module.startswith("smdist.contract"), node.module
    standard = {"__future__", "ctypes", "json", "os", "pathlib", "shlex", "signal", "subprocess"}
    assert imported <= standard | {"sys", "time", "smdist"}


ORPHAN = """
import os, subprocess, sys, time
sys.path.insert(0, {folder!r})
from node_start import supervise
line = "(trap '' TERM; echo $BASHPID > {pid_file}; sleep 60) & sleep 0.5; exit 3"
code = supervise(["bash", "-c", line], dict(os.environ), "/", grace=0.5)
sys.exit(code)
"""


def test_the_node_step_ends_what_its_command_leaves_running(tmp_path: Path):
    """An orphan that ignores SIGTERM (as training processes left by a torchrun that a second
    SIGTERM ended) is the step's child, and killed once the command has ended."""
    pid_file = tmp_path / "orphan.pid"
    code = ORPHAN.format(folder=str(Path(node_start.__file__).parent), pid_file=pid_file)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr  # the command's own exit code
    orphan = int(pid_file.read_text())
    assert not Path(f"/proc/{orphan}").exists()


def test_the_default_route_names_the_interface(tmp_path: Path):
    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway\ndocker0\t000011AC\t00000000\nens5\t00000000\t0100000A\n"
    )
    assert node_start.default_interface(str(table)) == "ens5"
    assert node_start.default_interface(str(tmp_path / "none")) == "eth0"
