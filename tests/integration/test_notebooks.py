"""The strategy notebooks are stored executed, and a fresh run still gives what they show.

The stored cells must be the template's (``notebooks/build_notebooks.py``); their outputs must
be free of run-specific values; and running each notebook against the local backend must give
outputs of the same shape as the stored ones — the same cells with outputs, the same output
types and mime types (the plan's HTML, the loss plot's PNG) and the same key lines — not the
same bytes: losses (and so the plot's pixels) are not promised to repeat across machines.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from local_jobs import assert_a_sound_finish  # noqa: E402

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS_DIR))
import build_notebooks  # noqa: E402
import notebook_run  # noqa: E402

NAMES = [n.file for n in build_notebooks.NOTEBOOKS]
STALE = "run python notebooks/build_notebooks.py --execute"
# Lines every run prints, whatever the losses and the job name's suffix.
KEY_LINES = (
    re.compile(r"^\S+-notebook-\S+ Completed$"),
    re.compile(r"^loss fell from \d+\.\d+ at step \d+ to \d+\.\d+ at step \d+ \(\d+ metric"),
    re.compile(r"^\.smdist/jobs/\S+/output/model\.tar\.gz$"),
    re.compile(r"^No AWS settings: not submitting\. The request would be:$"),
)
STRATEGY_ROW = re.compile(r">strategy</th><td>([^<]+)</td>")
# What a machine or a run would leak into a stored output.
LEAKS = re.compile(r"file://|(?<![\w.<])/(?:tmp|home|Users|root|var|private)/|smdist-notebook-")


def _stored(name: str):
    return nbformat.read(NOTEBOOKS_DIR / name, as_version=4)


def _code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _shape(notebook) -> list[tuple[str, list[tuple[str, str | None, tuple[str, ...]]]]]:
    """Per code cell: each output's type, stream name and mime types, in order."""
    return [
        (
            cell.id,
            [
                (output.output_type, output.get("name"), tuple(sorted(output.get("data", {}))))
                for output in cell.outputs
            ],
        )
        for cell in _code_cells(notebook)
    ]


def _text(notebook) -> str:
    """Every text output (streams, text/* data), pictures left out."""
    return "\n".join(
        "\n".join(
            [str(output.get("text", ""))]
            + [str(v) for mime, v in output.get("data", {}).items() if mime.startswith("text/")]
        )
        for cell in _code_cells(notebook)
        for output in cell.outputs
    )


def _mimes(notebook) -> set[str]:
    return {mime for _, outputs in _shape(notebook) for *_, mimes in outputs for mime in mimes}


def _key_lines(notebook) -> list[str]:
    lines = [line.strip() for line in _text(notebook).splitlines()]
    found = [p.pattern for p in KEY_LINES if any(p.search(line) for line in lines)]
    return found + STRATEGY_ROW.findall(_text(notebook))


def test_every_strategy_has_a_notebook():
    import smdist.strategies as strategies
    from smdist.strategies.registry import REGISTRY, STRATEGY_NAMES, strategy_model

    models = set()
    for entry in REGISTRY:  # sdmp is two models, SMP v1 and v2, chosen by version
        model = strategy_model(entry.kind)
        models |= set(model.__subclasses__()) or {model}
    names = {name: getattr(strategies, name) for name in STRATEGY_NAMES}
    shown = {type(eval(nb.strategy, names)) for nb in build_notebooks.NOTEBOOKS}
    assert {m.__name__ for m in models - shown} == set()


def test_the_notebooks_install_brings_jupyter():
    """The README's install for the notebooks is an extra that has JupyterLab and what the
    notebooks run, and the tests' environment (where they are re-executed) installs it."""
    import tomllib

    root = NOTEBOOKS_DIR.parent
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {re.split(r"[<>=\[ ]", requirement)[0] for requirement in extras["notebooks"]}
    assert {"jupyterlab", "ipykernel", "nbclient", "nbformat", "matplotlib"} <= names
    assert "pip install -e '.[notebooks]'" in (root / "README.md").read_text()
    assert re.search(r'extras="dev,notebooks', (root / ".ci" / "install-tests").read_text())


@pytest.mark.parametrize("name", NAMES)
def test_stored_cells_are_the_template(name):
    template = build_notebooks.build(build_notebooks.NOTEBOOKS[NAMES.index(name)])
    stored = _stored(name)
    assert build_notebooks.sources(stored) == build_notebooks.sources(template), (
        f"{name} is stale: {STALE}"
    )
    assert stored.metadata["kernelspec"] == template.metadata["kernelspec"]


@pytest.mark.parametrize("name", NAMES)
def test_stored_notebook_is_executed_and_clean(name):
    stored = _stored(name)
    cells = _code_cells(stored)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1)), (
        f"{name} is not stored executed top to bottom: {STALE}"
    )
    assert len(_key_lines(stored)) == len(KEY_LINES) + 1, f"{name} lacks its key lines: {STALE}"
    pictures = [
        o.data["image/png"] for c in cells for o in c.outputs if "image/png" in o.get("data", {})
    ]
    assert len(pictures) == 1, f"{name} should store exactly one loss plot"
    assert base64.b64decode(pictures[0]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "text/html" in _mimes(stored), f"{name} should store the plan's HTML display"
    text = _text(stored) + str(stored.metadata)
    leaks = sorted({m.group(0) for m in LEAKS.finditer(text)})
    homes = [str(Path.home())] if len(Path.home().parts) > 1 else []
    leaks += [p for p in (str(NOTEBOOKS_DIR.parent), *homes) if p in text]
    assert not leaks, f"{name} stores run-specific paths {leaks}: {STALE}"
    assert not notebook_run.JOB_SUFFIX.search(text), f"{name} stores a real job name"


@pytest.fixture(scope="module")
def fresh_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Any, Path, Any]]:
    """Each notebook whose test was selected and that can run here, run afresh from its stored
    cells against the local backend (one kernel for all, ``notebook_run.execute_each``):
    name -> (the executed notebook, its directory, what it raised)."""
    selected = {
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_fresh_run_has_the_stored_shape"
        and item.module is request.module
    }
    runnable = [
        nb.file
        for nb in build_notebooks.NOTEBOOKS
        if nb.file in selected and not build_notebooks.missing_modules(nb)
    ]
    runs = []
    for name in runnable:
        fresh = copy.deepcopy(_stored(name))
        for cell in _code_cells(fresh):
            cell.outputs, cell.execution_count = [], None
        runs.append((fresh, tmp_path_factory.mktemp(Path(name).stem)))
    with pytest.MonkeyPatch.context() as patch:  # the kernel inherits the environment
        for variable in notebook_run.AWS_VARIABLES:
            patch.delenv(variable, raising=False)
        raised = notebook_run.execute_each(runs)
    return {name: (*run, error) for name, run, error in zip(runnable, runs, raised, strict=True)}


# One kernel runs every notebook (fresh_runs): the tests run on one worker, the first runs all.
@pytest.mark.integration
@pytest.mark.torch
@pytest.mark.xdist_group("notebooks_fresh_runs")
@pytest.mark.parametrize("name", NAMES)
def test_fresh_run_has_the_stored_shape(name, fresh_runs):
    missing = build_notebooks.missing_modules(build_notebooks.NOTEBOOKS[NAMES.index(name)])
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    fresh, workdir, error = fresh_runs[name]
    if error is not None:
        raise error  # a CellExecutionError: the cell that failed and its traceback
    stored = _stored(name)
    assert _shape(fresh) == _shape(stored), f"{name}'s outputs changed shape: {STALE}"
    assert _key_lines(fresh) == _key_lines(stored), f"{name}'s key lines changed: {STALE}"
    # What test_local_backend's run_end_to_end asserts of every strategy's job (its 2 hosts x 1
    # runs of MWMS, Horovod-PyTorch, SDDP and SMP v1 are these notebooks').
    [job_dir] = sorted((workdir / ".smdist" / "jobs").iterdir())  # in the notebook's directory
    record = json.loads((job_dir / "job.json").read_text())
    strategy = build_notebooks.NOTEBOOKS[NAMES.index(name)].strategy
    # ParameterServerStrategy: the coordinator alone reports (and holds the model).
    ranks = len(record["hosts"]) * record["processes_per_host"]
    world = 1 if strategy.startswith("ParameterServer") else ranks
    log = (job_dir / "logs" / "job.log").read_text()
    assert_a_sound_finish(log, world, job_dir, workdir)
