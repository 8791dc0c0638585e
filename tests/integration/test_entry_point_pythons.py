"""Every ready entry point's smdist imports work through the package root on every Python the
catalogue accepts for a job that runs that script.

A script imports ``smdist.runtime`` (and ``smdist.contract``) as ``from smdist.x import y``.
Where smdist is installed (an image of one's own, ``python -m entry_points.<script>``) that
loads the package root, ``smdist/__init__.py``, and what it imports, on the image's Python.
test_runtime_pythons.py imports the shipped bundle, whose ``smdist`` is a stub; this runs each
script's module-level ``smdist`` imports against the repository's package instead, on each
Python of an image ``smdist.plan`` accepts for a job running that script, with the frameworks
and smdist's own dependencies absent (``import smdist`` must need none of them).
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
from pathlib import Path

import pytest
from test_runtime_pythons import find_python

from smdist.checks.catalog import images_carrying
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ENTRY_POINTS = REPO / "entry_points"
SCRIPTS = sorted(p.name for p in ENTRY_POINTS.glob("*.py") if p.name != "__init__.py")
CLUSTER = {"instance_type": "ml.p4d.24xlarge", "instance_count": 2}
# A job on each ready script: its entry point and the program that starts it (smdist's torchrun
# launcher for pytorch_ddp) both run on the image's Python.
STRATEGIES = [
    {"kind": "pytorch_ddp"},
    {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
    {"kind": "horovod"},
    {"kind": "horovod", "framework": "tensorflow"},
    {"kind": "sddp"},
    {"kind": "sdmp", "version": 1, "partitions": 2},
    {"kind": "sdmp", "version": 2},
    {"kind": "mwms"},
    {"kind": "parameter_server"},
]
# Absent on the probing interpreter: the frameworks, and what only planning needs.
ABSENT = ["torch", "tensorflow", "horovod", "sagemaker", "boto3", "pydantic", "yaml", "typer"]

# Standard library only, and syntax every accepted Python reads: it runs on the oldest.
PROBE = """
import json, sys, traceback
repo, statements, absent = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
for name in absent:
    sys.modules[name] = None  # importing it raises ModuleNotFoundError
sys.path.insert(0, repo)
results = {}
for statement in ["import smdist"] + statements:
    try:
        exec(statement, {})
        results[statement] = "ok"
    except BaseException as error:
        where = traceback.extract_tb(error.__traceback__)[-1:]
        at = " at {}:{}".format(where[0].filename, where[0].lineno) if where else ""
        text = "".join(traceback.format_exception_only(type(error), error)).strip()
        results[statement] = "FAILED: " + text + at
root = getattr(sys.modules.get("smdist"), "__file__", None)
print(json.dumps({"python": list(sys.version_info[:2]), "root": root, "results": results}))
"""


def _job(strategy: dict, version: str | None = None, py: str | None = None) -> JobSpec:
    code = {"framework_version": version, "py_version": py} if version else {}
    return JobSpec.from_dict(
        {"name": "job", "strategy": strategy, "cluster": CLUSTER, "code": code}
    )


def _scripts_of(job: JobSpec) -> set[str]:
    return {job.entry_point, job.strategy.program(job.entry_point)}


@functools.cache
def accepted_pythons() -> dict[str, set[int]]:
    """Each ready script -> the minor versions of the Pythons (3.x) of the images ``plan``
    accepts for a job that runs it."""
    found: dict[str, set[int]] = {}
    for strategy in STRATEGIES:
        scripts = _scripts_of(_job(strategy))
        for image in images_carrying(_job(strategy)):
            for py in (p for p in image.py_versions if len(p) > 3):  # py3 names no Python
                try:
                    plan(_job(strategy, image.version, py))
                except SpecError:
                    continue
                for script in scripts:
                    found.setdefault(script, set()).add(int(py[3:]))
    return found


def _smdist_imports(body: list[ast.stmt], siblings: list[str]) -> list[str]:
    """The module-level ``smdist`` imports in ``body`` (in a try or an if too, not under
    TYPE_CHECKING), as source; sibling entry points it imports go to ``siblings``."""
    found = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # run only when called, with the framework there
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            found += _smdist_imports(node.orelse, siblings)
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "smdist":
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "smdist":
                    found.append(f"import {alias.name}")
                elif (ENTRY_POINTS / f"{alias.name}.py").is_file():
                    siblings.append(f"{alias.name}.py")
        for part in ("body", "orelse", "finalbody", "handlers"):
            found += _smdist_imports(getattr(node, part, []), siblings)
    return found


def script_imports(script: str) -> list[str]:
    """What ``script`` imports of smdist when it loads, with the sibling scripts it imports."""
    statements: list[str] = []
    pending, seen = [script], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = ast.parse((ENTRY_POINTS / name).read_text(), name)
        statements += _smdist_imports(tree.body, pending)
    return list(dict.fromkeys(statements))


def test_every_ready_script_is_run_by_a_job_above():
    """A new entry point needs its job in STRATEGIES, else no Python is checked for it."""
    assert sorted(accepted_pythons()) == SCRIPTS


def test_the_imports_found_are_the_scripts_own():
    statements = script_imports("pytorch_sddp.py")
    assert "from smdist.runtime.smddp import BACKEND_NAME, use_smddp" in statements
    assert "from smdist.runtime import paths" in statements  # through pytorch_ddp.py
    assert all("smdist" in s for s in statements)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_scripts_smdist_imports_work_on_every_python_accepted_for_it(script):
    statements = script_imports(script)
    assert statements, f"{script} imports nothing of smdist"
    checked, missing, failed = [], [], {}
    for minor in sorted(accepted_pythons()[script]):
        python = find_python(minor)
        if python is None:
            missing.append(f"3.{minor}")
            continue
        run = subprocess.run(
            [python, "-I", "-c", PROBE, str(REPO), json.dumps(statements), json.dumps(ABSENT)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        report = json.loads(run.stdout)
        assert report["python"] == [3, minor]
        bad = {s: r for s, r in report["results"].items() if r != "ok"}
        if bad:
            failed[f"3.{minor}"] = bad
        else:  # what loaded is the package, not a stub or another installed smdist
            assert report["root"] == str(REPO / "smdist" / "__init__.py"), report
        checked.append(f"3.{minor}")
    assert not failed, json.dumps(failed, indent=1)
    if not checked:
        pytest.skip(f"none of the Pythons accepted for {script} is here: {', '.join(missing)}")
