"""The sbatch script a hyperpod-slurm dry run shows: every value quoted, the node settings
carried as they are, run here by bash with stand-ins for Slurm's scontrol and srun."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import smdist
from smdist.backends.hyperpod_slurm.options import HyperPodSlurmOptions
from smdist.backends.hyperpod_slurm.sbatch import mounts, pyxis_image, sbatch_lines, time_limit
from smdist.backends.hyperpod_slurm.submission import build
from smdist.errors import SpecError

SPEC = {
    "name": "hp-script",
    "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
    "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
    "code": {"framework_version": "2.13.0", "py_version": "py312"},
    "hyperparameters": {"note": 'it\'s $(touch pwned) `id` "quoted"', "epochs": 2},
    "max_run": 7200,
}
FAKE_SCONTROL = "#!/bin/sh\nprintf 'ip-10-0-0-1\\nip-10-0-0-2\\n'\n"
FAKE_SRUN = """#!{python}
import json, os, sys
with open(os.environ["SRUN_RECORD"], "w") as handle:
    json.dump({{"argv": sys.argv[1:], "hosts": os.environ["SMDIST_SLURM_HOSTS"],
               "efa": os.environ.get("FI_EFA_USE_HUGE_PAGE")}}, handle)
sys.exit(3)
"""


def options(tmp_path: Path, **given) -> HyperPodSlurmOptions:
    root = tmp_path / "shared fs" / "it's jobs"
    return HyperPodSlurmOptions.read(
        "hyperpod-slurm",
        {"job_root": str(root), "job_name": "hp-script-1", "region": "us-west-2", **given},
    )


def test_the_script_runs_as_written_every_value_arriving_intact(tmp_path: Path):
    python = str(tmp_path / "my env" / "bin" / "py'thon $HOME")
    value = build(smdist.plan(SPEC), options(tmp_path, python=python, processes_per_node=3))
    folder = Path(value.folder.path)
    folder.mkdir(parents=True)
    script = folder / "job.sbatch"
    script.write_text(value.script)
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, text in (("scontrol", FAKE_SCONTROL), ("srun", FAKE_SRUN)):
        (tools / name).write_text(text.format(python=sys.executable))
        (tools / name).chmod(0o755)
    record = tmp_path / "srun.json"
    environ = {
        "PATH": f"{tools}:{os.environ['PATH']}",
        "SLURM_JOB_ID": "7",
        "SLURM_JOB_NODELIST": "ip-10-0-0-[1-2]",
        "SRUN_RECORD": str(record),
    }
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=environ, capture_output=True, text=True
    )
    assert done.returncode == 3, done.stderr  # srun's exit code is the job's
    assert (folder / "exit_code").read_text() == "3\n"
    assert "smdist-slurm: job 7, run 1, on ip-10-0-0-1,ip-10-0-0-2" in done.stdout
    ran = json.loads(record.read_text())
    assert ran["hosts"] == "ip-10-0-0-1,ip-10-0-0-2"
    assert ran["argv"] == [
        "--label", "--kill-on-bad-exit=1", python, str(folder / "smdist_node.py"), str(folder)
    ]  # fmt: skip
    assert ran["efa"] == "0"  # ml.g5.12xlarge has EFA: HyperPod's libfabric settings
    settings = json.loads((folder / "node.json").read_text())
    assert settings["hyperparameters"]["note"] == json.dumps(SPEC["hyperparameters"]["note"])
    assert settings["code_dir"] == str(folder / "code")
    assert settings["environment"]["SMDIST_CHECKPOINT_DIR"] == str(folder / "checkpoints")
    assert not (tmp_path / "pwned").exists()


def test_the_directives_ask_for_whole_nodes_the_time_and_the_log_in_the_job_folder(tmp_path):
    value = build(smdist.plan(SPEC), options(tmp_path, partition="gpu-p5"))
    lines = sbatch_lines(value.script)
    folder = value.folder.path
    assert lines == [
        "#SBATCH --job-name=hp-script-1",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --exclusive",
        "#SBATCH --wait-all-nodes=1",
        "#SBATCH --time=0-02:00:00",
        "#SBATCH --requeue",
        "#SBATCH --open-mode=append",
        f"#SBATCH {shlex.quote(f'--output={folder}/logs/%x_%j.out')}",
        "#SBATCH --partition=gpu-p5",
    ]
    assert "4 process(es) per node" in value.script.splitlines()[1]  # ml.g5.12xlarge: 4 GPUs
    assert 'AUTO_RESUME="--auto-resume=1"' in value.script


def test_an_image_runs_under_pyxis_with_the_shared_folders_mounted(tmp_path: Path):
    image = "123456789012.dkr.ecr.us-west-2.amazonaws.com/train:1.0"
    spec = {**SPEC, "code": {**SPEC["code"], "image_uri": image}}
    value = build(smdist.plan(spec), options(tmp_path, checkpoint_dir="/fsx/checkpoints/x"))
    step = next(line for line in value.script.splitlines() if line.startswith("srun "))
    assert "--container-image=123456789012.dkr.ecr.us-west-2.amazonaws.com#train:1.0" in step
    root = str(tmp_path / "shared fs" / "it's jobs")
    assert f"--container-mounts={root}:{root},/fsx/checkpoints/x:/fsx/checkpoints/x" in (
        step.replace("'\"'\"'", "'")
    )
    assert "PYTHON=python\n" in value.script  # the container's own


def test_pyxis_names_time_limits_and_mounts():
    assert pyxis_image("/fsx/images/pytorch.sqsh") == "/fsx/images/pytorch.sqsh"
    assert pyxis_image("nvcr.io/nvidia/pytorch:24.01-py3") == "nvcr.io#nvidia/pytorch:24.01-py3"
    assert pyxis_image("pytorch/pytorch:latest") == "pytorch/pytorch:latest"
    assert time_limit(1) == "0-00:00:01"
    assert time_limit(28 * 86400 + 61) == "28-00:01:01"
    assert mounts("/fsx/smdist", "/fsx/smdist/a/checkpoints", "/fsx/data", "/fsx/data/x") == (
        "/fsx/smdist",
        "/fsx/data",
    )


def test_processes_per_node_resizes_the_plan_and_says_so(tmp_path: Path):
    value = build(smdist.plan(SPEC), options(tmp_path, processes_per_node=2))
    assert value.plan.launch.processes_per_host == 2
    assert value.plan.topology.world_size == 4
    assert any(
        "processes per node: 2 (--processes-per-node; the plan's is 4)" in n for n in value.notes
    )


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"job_root": "relative/jobs"}, "options.job_root"),
        ({"job_root": "/fsx/%u"}, "options.job_root"),
        ({"checkpoint_dir": "ckpt"}, "options.checkpoint_dir"),
        ({"head_node": "-oProxyCommand=touch"}, "options.head_node"),
        ({"partition": "gpu; rm"}, "options.partition"),
        ({"python": "-c"}, "options.python"),
        ({"processes_per_node": 0}, "options.processes_per_node"),
        ({"master_port": 70000}, "options.master_port"),
    ],
)
def test_an_option_that_cannot_reach_the_cluster_is_refused_naming_it(given, field):
    with pytest.raises(SpecError) as raised:
        HyperPodSlurmOptions.read("hyperpod-slurm", given)
    assert [problem.path for problem in raised.value.problems] == [field]
