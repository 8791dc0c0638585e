"""``smdist submit --backend hyperpod-slurm`` refusing what cannot run, before anything is
written or started: exit 2, the field named, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_process import run_smdist

REPO = Path(__file__).resolve().parents[2]
DDP = (REPO / "examples" / "pytorch_ddp.yaml").read_text()


def submit(tmp_path: Path, text: str, *flags: str, path: str | None = None):
    job = tmp_path / "job.yaml"
    job.write_text(text)
    return run_smdist(
        "submit", str(job), "--backend", "hyperpod-slurm", "--dry-run",
        "--root", str(tmp_path / "records"), *flags, cwd=tmp_path, path=path,
    )  # fmt: skip


def fake_tools(tmp_path: Path, srun_help: str) -> str:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "sbatch").write_text("#!/bin/sh\necho 'slurm 22.05.8'\n")
    (tools / "srun").write_text(f"#!/bin/sh\necho '{srun_help}'\n")
    for tool in tools.iterdir():
        tool.chmod(0o755)
    return f"{tools}:{os.environ['PATH']}"


def refused(done, field: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert f"{field}: " in done.stderr, done.stderr
    return done.stderr


def test_without_sbatch_here_a_head_node_is_needed(tmp_path: Path):
    said = refused(submit(tmp_path, DDP, path=str(tmp_path)), "--head-node")
    assert "is not given and this machine has no sbatch" in said
    assert not (tmp_path / "records").exists()


def test_with_a_head_node_the_script_is_shown_without_contacting_it(tmp_path: Path):
    shown = submit(tmp_path, DDP, "--head-node", "ubuntu@head", path=str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("#!/bin/bash\n")
    assert "JOB_DIR=/fsx/smdist/pytorch-ddp-" in shown.stdout
    assert "submitted with sbatch on ubuntu@head" in shown.stderr
    assert not (tmp_path / "records").exists()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ((REPO / "examples" / "horovod_pytorch.yaml").read_text(), "strategy.kind"),
        (DDP + "inputs: {train: s3://bucket/train}\n", "inputs.train.uri"),
        (DDP.replace("ml.g5.xlarge", "ml.c5n.xlarge"), "cluster.instance_type"),
    ],
)  # fmt: skip
def test_a_job_that_cannot_run_there_is_refused_naming_the_field(tmp_path, text, field):
    refused(submit(tmp_path, text, "--head-node", "head"), field)


def test_an_option_the_cluster_cannot_take_is_refused_naming_the_flag(tmp_path: Path):
    said = refused(submit(tmp_path, DDP, "--head-node", "h", "--job-root", "jobs"), "--job-root")
    assert "must be an absolute path on the cluster" in said


def test_an_image_without_pyxis_is_refused_saying_what_would_run(tmp_path: Path):
    text = DDP.replace("code:\n", "code:\n  image_uri: 1234.dkr.ecr.us-west-2.amazonaws.com/t:1\n")
    said = refused(
        submit(tmp_path, text, path=fake_tools(tmp_path, "Usage: srun")), "code.image_uri"
    )
    assert "runs under pyxis (srun --container-image)" in said and "--python" in said


def test_an_image_with_pyxis_runs_in_its_container(tmp_path: Path):
    text = DDP.replace("code:\n", "code:\n  image_uri: /fsx/images/torch.sqsh\n")
    shown = submit(tmp_path, text, path=fake_tools(tmp_path, "--container-image=[USER@]IMG"))
    assert shown.returncode == 0, shown.stderr
    assert "--container-image=/fsx/images/torch.sqsh" in shown.stdout


def test_status_of_a_job_never_submitted_from_here_is_exit_2(tmp_path: Path):
    done = run_smdist("status", "nosuch", "--backend", "hyperpod-slurm", "--root", str(tmp_path))
    assert done.returncode == 2
    assert "job_name: is no hyperpod-slurm job submitted from here" in done.stderr


def test_its_flags_are_submits_and_refused_for_another_backend(tmp_path: Path):
    helped = run_smdist("submit", "--help")
    for flag in ("--head-node", "--job-root", "--processes-per-node", "--partition"):
        assert flag in helped.stdout
    job = tmp_path / "job.yaml"
    job.write_text(DDP)
    done = run_smdist("submit", str(job), "--dry-run", "--job-root", "/fsx/x", without_aws=True)
    assert done.returncode == 2
    assert "--job-root: applies to --backend hyperpod-slurm or hyperpod-eks only" in done.stderr


def test_a_channel_of_the_clusters_file_system_is_not_looked_for_here(tmp_path: Path):
    """``file:///fsx/...`` names the cluster's shared file system: absent on the submitting
    machine, it is no reason to refuse a HyperPod job, while a plan for this machine refuses it."""
    text = DDP + "inputs:\n  train: {uri: 'file:///fsx/smdist-no-such/train'}\n"
    shown = submit(tmp_path, text, "--head-node", "ubuntu@head", path=str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert "/fsx/smdist-no-such/train" in shown.stdout
    job = tmp_path / "job.yaml"
    here = run_smdist("plan", str(job), cwd=tmp_path)
    assert "inputs.train.uri: does not exist on this machine" in refused(here, "inputs.train.uri")
