"""Every strategy notebook runs top to bottom against the local backend.

The notebooks plan the job, run it on two emulated hosts, check the loss fell and open the
model archive; the SageMaker cell falls back to the dry run when no AWS settings are present.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS_DIR))
import build_notebooks  # noqa: E402

NEEDS = {
    "02_mwms.ipynb": ("tensorflow", "tf_keras"),
    "03_horovod.ipynb": ("horovod",),
}
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "SMDIST_ROLE",
)


def test_committed_notebooks_match_their_template():
    for notebook in build_notebooks.NOTEBOOKS:
        committed = (NOTEBOOKS_DIR / notebook.file).read_text()
        assert committed == build_notebooks.render(notebook), (
            f"{notebook.file} is stale: run python notebooks/build_notebooks.py"
        )


@pytest.mark.integration
@pytest.mark.torch
@pytest.mark.parametrize("name", [n.file for n in build_notebooks.NOTEBOOKS])
def test_notebook_runs_against_the_local_backend(name, tmp_path, monkeypatch):
    for module in NEEDS.get(name, ()):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    for variable in AWS_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    shutil.copy(NOTEBOOKS_DIR / name, tmp_path / name)
    notebook = nbformat.read(tmp_path / name, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert "Completed" in outputs
    assert "model.tar.gz" in outputs
    assert "No AWS settings" in outputs
