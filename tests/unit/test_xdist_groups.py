"""The suite's modules that share one finished job among their tests mark themselves
``xdist_group`` and rely on ``--dist loadgroup`` (``.ci/test``) to keep the group on one
worker: when it does not (pytest 9.2 with pytest-xdist 3.8), each worker that draws one of the
group's tests runs the shared job again, and nothing fails but the suite's time. This runs a
small session as ``.ci/test`` runs the suite and checks that a group stays on one worker.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("xdist")

MODULE = """
import os

import pytest

pytestmark = pytest.mark.xdist_group("{group}")


@pytest.mark.parametrize("case", range(4))
def test_case(case):
    with open(os.path.join({folder!r}, f"{group}-{{case}}"), "w") as seen:
        seen.write(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_a_group_of_tests_runs_on_one_worker(tmp_path):
    tests, seen = tmp_path / "tests", tmp_path / "seen"
    tests.mkdir()
    seen.mkdir()
    for group in ("first", "second"):
        module = MODULE.format(group=group, folder=str(seen))
        (tests / f"test_{group}.py").write_text(textwrap.dedent(module))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup"]
        + ["-p", "no:cacheprovider", "--rootdir", str(tests), str(tests)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for group in ("first", "second"):
        workers = {path.read_text() for path in seen.glob(f"{group}-*")}
        assert len(list(seen.glob(f"{group}-*"))) == 4
        assert len(workers) == 1, f"group {group!r} ran on workers {sorted(workers)}"
