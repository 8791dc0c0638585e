"""A notebook as ``code.entry_point`` is refused by every command before anything runs: SageMaker
runs the entry point with ``python``, which reads the notebook's JSON as one expression and
"completes" having trained nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_process import run_smdist

NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def job_with_notebook(tmp_path: Path, entry_point: str = "train.ipynb") -> Path:
    source = tmp_path / "src"
    (source / entry_point).parent.mkdir(parents=True, exist_ok=True)
    (source / entry_point).write_text(json.dumps(NOTEBOOK))
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: nb\nstrategy: {kind: pytorch_ddp}\n"
        "cluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n"
        f"code: {{source_dir: src, entry_point: {entry_point}}}\n"
    )
    return job


def smdist(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_smdist(*args, cwd=cwd, without_aws=True)


@pytest.mark.parametrize("command", ["validate", "plan", "run", "submit"])
def test_every_command_refuses_a_notebook_entry_point_with_exit_2(tmp_path, command):
    done = smdist(tmp_path, command, str(job_with_notebook(tmp_path)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("invalid job spec")
    assert "code.entry_point: 'train.ipynb' is a Jupyter notebook" in done.stderr
    assert "`jupyter nbconvert --to script train.ipynb` (it writes train.py)" in done.stderr
    assert not (tmp_path / ".smdist").exists()  # nothing was started


def test_the_export_advice_keeps_the_notebooks_folder(tmp_path):
    done = smdist(tmp_path, "validate", str(job_with_notebook(tmp_path, "nbs/Train.IPYNB")))
    assert done.returncode == 2
    assert "(it writes nbs/Train.py) and set code.entry_point: nbs/Train.py" in done.stderr


def test_a_script_beside_the_notebook_validates(tmp_path):
    job = job_with_notebook(tmp_path)
    (tmp_path / "src" / "train.py").write_text("print('training')\n")
    job.write_text(job.read_text().replace("train.ipynb", "train.py"))
    done = smdist(tmp_path, "validate", str(job))
    assert done.returncode == 0, done.stderr
