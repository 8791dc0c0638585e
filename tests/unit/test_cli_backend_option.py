"""``--backend`` reads the same in every command: an option (never "invalid job spec"), and a
local job is ``smdist run``'s, a SageMaker one ``smdist submit``'s; a message that points to
the local backend names the command that runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import run_smdist

JOB = """
name: hello
strategy: {kind: mwms}
cluster: {instance_type: ml.c5.xlarge, instance_count: 2}
code: {source_dir: src, entry_point: train.py, framework_version: "2.21"}
"""


def job_file(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('trained on', __import__('os').uname()[1])\n")
    (tmp_path / "job.yaml").write_text(JOB)
    return tmp_path / "job.yaml"


def smdist(cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    return run_smdist(*args, cwd=cwd, without_aws=True, path=path, timeout=300)


def test_submit_backend_local_points_to_smdist_run_as_an_option_error(tmp_path):
    done = smdist(tmp_path, "submit", str(job_file(tmp_path)), "--backend", "local")
    assert done.returncode == 2
    assert "invalid job spec" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "invalid option",
        "  - --backend: local jobs run with `smdist run FILE`, not submit; "
        "valid: sagemaker, sagemaker-local, hyperpod-slurm, hyperpod-eks",
    ]


def test_submit_with_an_unknown_backend_is_an_option_error(tmp_path):
    done = smdist(tmp_path, "submit", str(job_file(tmp_path)), "--backend", "cloud")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "invalid option"
    assert "--backend: is not one of submit's backends (got 'cloud')" in done.stderr


def test_run_accepts_backend_local(tmp_path):
    job = job_file(tmp_path)
    done = smdist(tmp_path, "run", str(job), "--backend", "local", "--root", ".smdist")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "trained on" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("backend", "told"),
    [
        ("sagemaker", "`smdist submit FILE --backend sagemaker`"),
        ("sagemaker-local", "`smdist submit FILE --backend sagemaker-local`"),
        ("cloud", "`smdist submit FILE --backend sagemaker`"),
    ],
)
def test_run_refuses_another_backend_naming_smdist_submit(tmp_path, backend, told):
    done = smdist(tmp_path, "run", str(job_file(tmp_path)), "--backend", backend)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "invalid option"
    assert "--backend: run is always local" in done.stderr and told in done.stderr
    assert not (tmp_path / ".smdist").exists()  # nothing was started


def test_local_modes_docker_advice_names_the_command_that_runs_locally(tmp_path):
    no_docker = str(Path(sys.executable).parent)  # python, and no docker
    done = smdist(
        tmp_path, "submit", str(job_file(tmp_path)), "--backend", "sagemaker-local",
        path=no_docker,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "`docker` is not on PATH" in done.stderr
    assert "run the job on emulated hosts with `smdist run FILE`" in done.stderr
    assert "use backend 'local'" not in done.stderr
