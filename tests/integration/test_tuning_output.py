"""What a search says and where: its result on stdout (for CI to capture), its progress as
trials end on stderr (``smdist tune --local``) or under a notebook's cell (``smdist.tune``).

Every search is real: small plain jobs on emulated hosts, run as a separate process.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from local_jobs import PYTHON, assert_nothing_left, clean_environ
from test_local_tuning import PLAIN, PLAIN_SCRIPT, write_job

# The module's two smdist.tune tests read one interpreter's output: run it once, on one worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("tuning_output")]

GRID = {"parameters": {"level": {"type": "categorical", "values": [1, 2]}}, "strategy": "Grid"}


def grid_job(tmp_path: Path) -> Path:
    return write_job(tmp_path, PLAIN_SCRIPT, GRID, strategy=PLAIN, hyperparameters={"epochs": 2})


def run(tmp_path: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, *command], cwd=tmp_path, env=clean_environ(), capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip


def test_tune_local_prints_what_it_found_on_stdout_and_its_progress_on_stderr(tmp_path):
    job, root = grid_job(tmp_path), tmp_path / ".smdist"
    done = run(tmp_path, "-m", "smdist.cli.app", "tune", str(job), "--local", "--root", str(root),
               "--hosts", "1")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    best = [line for line in out if line.startswith("best: trial ")]
    assert best and best[0].endswith("): train:loss=1.5"), done.stdout  # level 1: 1 + 1/2
    assert "values: level=1" in out, done.stdout
    assert any(line.startswith("model: ") and "model.tar.gz" in line for line in out), done.stdout
    assert "(best)" in done.stdout  # the table, its best row marked
    # progress, one line per trial as it ends, stays on stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("trial ")]
    assert [line.split(" (")[0] for line in progress] == ["trial 1/2", "trial 2/2"], done.stderr
    assert progress[-1].endswith("), train:loss=1.5"), done.stderr  # the best so far
    assert "trial 1/2" not in done.stdout and "best so far" not in done.stdout
    assert_nothing_left(tmp_path)


# A notebook's cells: a search with progress=False, then one with the default progress (each
# in a root of its own), in one interpreter so that the two searches share its start.
NOTEBOOK_CELLS = """
    import sys
    import smdist

    quiet = smdist.tune(sys.argv[1], options={"root": sys.argv[2], "hosts": 1}, progress=False)
    print("quiet:", quiet.status, len(quiet.trials), flush=True)
    result = smdist.tune(sys.argv[1], options={"root": sys.argv[3], "hosts": 1})
    print("result:", result.status, len(result.trials))
"""


@pytest.fixture(scope="module")
def in_python(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The stdout lines of ``NOTEBOOK_CELLS``."""
    folder = tmp_path_factory.mktemp("in-python")
    job = grid_job(folder)
    done = run(folder, "-c", textwrap.dedent(NOTEBOOK_CELLS), str(job), str(folder / "quiet"),
               str(folder / ".smdist"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert_nothing_left(folder)
    return done.stdout.splitlines()


def test_smdist_tune_with_progress_false_prints_nothing_while_it_runs(in_python):
    assert in_python[0] == "quiet: Completed 2", in_python


def test_smdist_tune_prints_a_line_as_each_trial_ends_with_the_best_so_far(in_python):
    lines = in_python[1:]
    assert lines[0].startswith("trial 1/2 (search-"), in_python
    assert ": Completed, train:loss=" in lines[0] and "best so far: trial " in lines[0]
    assert lines[1].startswith("trial 2/2 (search-"), in_python
    assert lines[1].endswith("), train:loss=1.5")  # the best: level 1, 1 + 1/2 at its end
    assert lines[2:] == ["result: Completed 2"], in_python
