"""A ``requirements.txt`` shipped with the code is installed before the script runs, under SDK v3.

SDK v2's toolkit pip-installs the code's ``requirements.txt`` by itself; v3's ``sm_train.sh``
installs a requirements file only when ``SourceCode.requirements`` names it. smdist names it
when the shipped code has one. Offline: the requirements name a one-module wheel the test
writes into the code directory, and the image's python is a fresh virtual environment (the
install lands there, never in this project's environments).
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from smdist.backends import sagemaker as backend
from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, ROLE
from .emulated_container import run_request
from .test_v3_runs import describe

# Real jobs: training frameworks run in emulated containers (`-m "not integration"` skips).
pytestmark = pytest.mark.integration

MODULE = "smdist_probe_pkg"
WHEEL = f"{MODULE}-1.0-py3-none-any.whl"
SCRIPT = f"import {MODULE}\nprint('PROBE ' + {MODULE}.VALUE)\n"
TF = {"framework_version": "2.14", "py_version": "py310"}


def write_wheel(path: Path) -> None:
    """A pure-Python wheel holding one module, written by hand (no build tools, no index)."""
    dist_info = f"{MODULE}-1.0.dist-info"
    files = {
        f"{MODULE}.py": "VALUE = 'installed from requirements.txt'\n",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {MODULE}\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: smdist-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


def code_with_requirements(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text(SCRIPT)
    write_wheel(source / WHEEL)
    (source / "requirements.txt").write_text(f"./{WHEEL}\n")
    return source


def image_python(tmp_path: Path) -> Path:
    """A fresh virtual environment with pip: the image's python, which the install changes."""
    venv = tmp_path / "image"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    return venv / "bin" / "python"


def spec(source: Path) -> JobSpec:
    return JobSpec.from_dict(
        {
            "name": "v3-requirements",
            "strategy": {"kind": "mwms"},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 1},
            "code": {"entry_point": "train.py", "source_dir": str(source), **TF},
        }
    )


def test_the_codes_requirements_txt_is_installed_before_the_script_runs(
    namespaces, boto_session, bucket, captured_requests, tmp_path
):
    source = code_with_requirements(tmp_path)
    python = image_python(tmp_path)
    backend.launch(plan(spec(source)), bucket=BUCKET, role=ROLE, boto_session=boto_session)
    (request,) = captured_requests
    (result,) = run_request(
        request, boto_session.client("s3"), hosts=1, python=python, root=tmp_path / "hosts",
        timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, describe([result])
    assert "install_requirements.py requirements.txt" in result.output
    assert "PROBE installed from requirements.txt" in result.stdout


def test_without_naming_it_v3_installs_nothing_and_the_import_fails(
    namespaces, boto_session, bucket, captured_requests, tmp_path
):
    """Why smdist names the file: a ModelTrainer given the same code without
    ``SourceCode.requirements`` leaves it uninstalled."""
    source = code_with_requirements(tmp_path)
    python = image_python(tmp_path)
    trainer = v3.model_trainer(plan(spec(source)), role=ROLE, bucket=BUCKET,
                               session=boto_session)  # fmt: skip
    assert trainer.source_code.requirements == "requirements.txt"  # smdist names it
    trainer.source_code = trainer.source_code.model_copy(update={"requirements": None})
    trainer.train(wait=False, logs=False)
    (request,) = captured_requests
    (result,) = run_request(
        request, boto_session.client("s3"), hosts=1, python=python, root=tmp_path / "hosts",
        timeout=240,
    )  # fmt: skip
    assert result.returncode != 0
    assert "install_requirements" not in result.output
    assert f"No module named '{MODULE}'" in result.output, describe([result])
