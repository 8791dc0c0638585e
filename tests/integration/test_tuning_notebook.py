"""The tuning notebook is stored executed, and a fresh run still gives what it shows: the local
search's best trial, its table and plot, then the SageMaker tuning job's dry-run request."""

from __future__ import annotations

import base64
import copy
import re
import sys
from pathlib import Path

import pytest
from local_jobs import checksums

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS_DIR))
import build_tuning_notebook  # noqa: E402
import notebook_run  # noqa: E402
from test_notebooks import _code_cells, _shape, _text  # noqa: E402

STALE = "run python notebooks/build_tuning_notebook.py --execute"
KEY_LINES = (
    re.compile(r"^ddp-tuning: Completed, 3 trials$"),
    re.compile(r"^best: trial \d, train:loss=\d+\.\d+, values \{'learning_rate': "),
    re.compile(r"^model: \.smdist/jobs/ddp-tuning-\d/output/model\.tar\.gz$"),
    re.compile(r"^No AWS settings: not submitting\. The tuning job's request would hold:$"),
    re.compile(r'^"ScalingType": "Logarithmic"$'),
    re.compile(r"^instances per trial: 2$"),
    re.compile(r"^fixed: \[.*'sagemaker_program', 'sagemaker_region', 'sagemaker_submit_dir"),
)
LEAKS = re.compile(r"file://|(?<![\w.<])/(?:tmp|home|Users|root|var|private|work)/")


def _stored():
    return nbformat.read(NOTEBOOKS_DIR / build_tuning_notebook.FILE, as_version=4)


def _key_lines(notebook) -> list[str]:
    lines = [line.strip() for line in _text(notebook).splitlines()]
    return [p.pattern for p in KEY_LINES if any(p.search(line) for line in lines)]


def test_stored_cells_are_the_template():
    stored = _stored()
    assert build_tuning_notebook.sources(stored) == build_tuning_notebook.sources(
        build_tuning_notebook.build()
    ), f"the tuning notebook is stale: {STALE}"


def test_stored_notebook_is_executed_with_its_table_and_plot():
    stored = _stored()
    cells = _code_cells(stored)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1)), STALE
    assert _key_lines(stored) == [p.pattern for p in KEY_LINES], STALE
    pictures = [
        o.data["image/png"] for c in cells for o in c.outputs if "image/png" in o.get("data", {})
    ]
    assert len(pictures) == 1 and base64.b64decode(pictures[0]).startswith(b"\x89PNG")
    tables = [o for c in cells for o in c.outputs if "text/html" in o.get("data", {})]
    assert len(tables) == 1 and "learning_rate" in tables[0].data["text/html"]
    leaks = sorted({m.group(0) for m in LEAKS.finditer(_text(stored) + str(stored.metadata))})
    assert not leaks, f"the tuning notebook stores run-specific paths {leaks}: {STALE}"


@pytest.mark.integration
@pytest.mark.torch
def test_fresh_run_has_the_stored_shape(tmp_path, monkeypatch):
    for module in build_tuning_notebook.NEEDS:
        pytest.importorskip(module)
    for variable in notebook_run.AWS_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    fresh = copy.deepcopy(_stored())
    for cell in _code_cells(fresh):
        cell.outputs, cell.execution_count = [], None
    notebook_run.execute(fresh, tmp_path)  # raises CellExecutionError if a cell fails
    assert _shape(fresh) == _shape(_stored()), f"the outputs changed shape: {STALE}"
    assert _key_lines(fresh) == [p.pattern for p in KEY_LINES]
    assert (tmp_path / ".smdist" / "tuning" / "ddp-tuning" / "trials.json").is_file()
    # Every trial is the whole distributed job (test_local_tuning's searches run plain scripts):
    # DDP over gloo on 2 emulated hosts, whose 2 ranks end with the same weights.
    trials = sorted((tmp_path / ".smdist" / "jobs").glob("ddp-tuning-*"))
    assert [trial.name for trial in trials] == [f"ddp-tuning-{n}" for n in range(3)]
    for trial in trials:
        log = (trial / "logs" / "job.log").read_text()
        found = checksums(log)
        assert sorted(found) == [0, 1] and len(set(found.values())) == 1, log
        assert sorted(host.name for host in (trial / "hosts").iterdir()) == ["algo-1", "algo-2"]
