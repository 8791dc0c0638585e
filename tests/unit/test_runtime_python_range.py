"""smdist's in-container code has one Python range (``smdist.runtime.PYTHON_FLOOR``..CEILING).

The catalogue refuses an image whose Python is outside it for a job that runs that code (a
ready entry point, smdist's torchrun launcher, smdist's SDK v3 driver) and accepts it for a
user's own script that needs none of it. Ruff checks the code's syntax against the floor, and
a scan finds the run-time constructs newer than the floor that ruff does not see. (That the
code runs on every interpreter of the range: tests/integration/test_runtime_pythons.py.)
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import smdist
from smdist.backends.sagemaker.v3 import request as v3_request
from smdist.catalog import images
from smdist.errors import SpecError
from smdist.runtime import PYTHON_CEILING, PYTHON_FLOOR, PYTHON_RANGE
from smdist.spec.job import JobSpec

REPO = Path(__file__).resolve().parents[2]
IN_CONTAINER = [
    *sorted((REPO / "smdist" / "runtime").rglob("*.py")),
    *sorted((REPO / "smdist" / "contract").rglob("*.py")),
    *sorted((REPO / "entry_points").glob("*.py")),
    *sorted((REPO / "smdist" / "drivers").glob("*.py")),
]
# An A100 (8.0): every catalogued image has kernels for it (a V100 has none in CUDA 13 images).
CLUSTER = {"instance_type": "ml.p4d.24xlarge", "instance_count": 2}
OWN_SCRIPT = {"entry_point": "train.py"}


def spec(strategy: dict, version: str, py: str | None = None, **code) -> JobSpec:
    pinned = {"framework_version": version, **({"py_version": py} if py else {})}
    return JobSpec.from_dict(
        {"name": "job", "strategy": strategy, "cluster": CLUSTER, "code": {**pinned, **code}}
    )


def refusal(job: JobSpec):
    with pytest.raises(SpecError) as caught:
        smdist.plan(job)
    (problem,) = [p for p in caught.value.problems if "in-container" in p.message]
    return problem


def python_of(image: images.TrainingImage) -> tuple[int, int]:
    (py,) = {p for p in image.py_versions if p != "py3"}
    return 3, int(py[3:])


# --- the catalogue ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "version", "python"),
    [
        ({"kind": "pytorch_ddp"}, "1.8.1", "3.6"),
        ({"kind": "horovod"}, "1.8.0", "3.6"),
        ({"kind": "horovod", "framework": "tensorflow"}, "2.5.1", "3.7"),
        ({"kind": "sdmp", "partitions": 2}, "1.8.1", "3.6"),
    ],
)
def test_a_ready_entry_point_is_refused_on_an_image_below_the_floor(strategy, version, python):
    problem = refusal(spec(strategy, version))
    assert problem.path == "code.framework_version" and problem.value == version
    assert f"Python {python}" in problem.message and "ready entry point" in problem.message
    assert f"smdist's in-container code, which runs on {PYTHON_RANGE}" in problem.message
    valid = problem.valid.split("; or ")[0].split(": ")[1].split(", ")
    assert version not in valid and "code.entry_point" in problem.valid
    repository = images.repository_for(spec(strategy, version).strategy.framework)
    for allowed in valid:  # the versions offered would pass
        image = images.find_image(repository, allowed)
        assert PYTHON_FLOOR <= python_of(image) <= PYTHON_CEILING, allowed


def test_py3_names_the_same_old_python():
    problem = refusal(spec({"kind": "horovod"}, "1.8.1", "py3"))
    assert problem.path == "code.framework_version" and "Python 3.6" in problem.message


@pytest.mark.parametrize(
    ("strategy", "version"),
    [
        ({"kind": "horovod"}, "1.8.1"),
        ({"kind": "horovod", "framework": "tensorflow"}, "2.5.1"),
        ({"kind": "sdmp", "partitions": 2}, "1.8.1"),
    ],
)
def test_a_users_own_script_is_accepted_there(strategy, version):
    """The toolkit (SDK v2) starts the user's script on the image's Python: no smdist code."""
    job = spec(strategy, version, **OWN_SCRIPT)
    assert smdist.plan(job).spec.code.framework_version == version


def test_smdists_torchrun_launcher_is_refused_there():
    problem = refusal(spec({"kind": "pytorch_ddp"}, "1.8.1", **OWN_SCRIPT))
    assert problem.path == "code.framework_version" and "torchrun launcher" in problem.message
    assert problem.valid.startswith(f"a version whose image has {PYTHON_RANGE}: 1.9.0, ")


def test_smdists_v3_driver_is_refused_there():
    """Under SDK v3 a Horovod job runs smdist's driver on every host."""
    job = spec({"kind": "horovod", "framework": "tensorflow"}, "2.5.1", **OWN_SCRIPT)
    (problem,) = v3_request.carriage_problems(smdist.plan(job))
    assert problem.path == "code.framework_version" and problem.value == "2.5.1"
    assert "SDK v3 driver" in problem.message and PYTHON_RANGE in problem.message
    assert "2.6.0" in problem.valid and "2.5.1" not in problem.valid.split(";")[0]
    newer = spec({"kind": "horovod", "framework": "tensorflow"}, "2.6.0", **OWN_SCRIPT)
    assert v3_request.carriage_problems(smdist.plan(newer)) == []


def test_every_image_in_the_range_is_accepted():
    """The range covers the catalogue's newest Python; every image in it takes the ready
    entry points (those below are the refused ones above)."""
    checked = 0
    for repository, strategy in (
        ("pytorch-training", {"kind": "pytorch_ddp"}),
        ("tensorflow-training", {"kind": "mwms"}),
    ):
        for image in images.training_images(repository):
            assert python_of(image) <= PYTHON_CEILING, (repository, image.version)
            too_old_for_mwms = smdist.catalog.compare_versions(image.version, "2.9") < 0
            if python_of(image) < PYTHON_FLOOR or (strategy["kind"] == "mwms" and too_old_for_mwms):
                continue
            assert smdist.plan(spec(strategy, image.version)), image.version
            checked += 1
    assert checked > 30


# --- the code: syntax (ruff) and run-time constructs (a scan) ---------------------------------


# Syntax each Python brought (ruff names the version a construct needs).
NEW_SYNTAX = {
    (3, 8): "if (n := 1):\n    pass\n",
    (3, 9): "with (open('a') as a, open('b') as b):\n    pass\n",
    (3, 10): "match 1:\n    case _:\n        pass\n",
    (3, 11): "try:\n    pass\nexcept* ValueError:\n    pass\n",
    (3, 12): "type Alias = int\n",
}


def ruff_check(source: str, filename: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    return subprocess.run(
        [ruff, "check", "--no-cache", "--stdin-filename", filename, "-"],
        input=source, capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip


@pytest.mark.parametrize(
    "filename",
    ["smdist/runtime/environments/new.py", "entry_points/new.py", "smdist/drivers/new.py"],
)
def test_ruff_checks_the_in_container_code_against_the_floor(filename):
    """pyproject's per-file-target-version: the floor's syntax passes, the next version's not."""
    major, minor = PYTHON_FLOOR
    assert ruff_check(NEW_SYNTAX[(major, minor)], filename).returncode == 0
    refused = ruff_check(NEW_SYNTAX[(major, minor + 1)], filename)
    assert refused.returncode == 1 and f"Python {major}.{minor}" in refused.stdout, refused.stdout
    assert ruff_check(NEW_SYNTAX[(major, minor + 1)], "smdist/new.py").returncode == 0


def annotation_nodes(tree: ast.AST) -> set[int]:
    """The nodes inside annotations: never evaluated (``from __future__ import annotations``)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            annotations = [a.annotation for a in every] + [node.returns]
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        for annotation in annotations:
            if annotation is not None:
                inside.update(id(n) for n in ast.walk(annotation))
    return inside


GENERIC_BUILTINS = {"list", "dict", "tuple", "set", "frozenset", "type"}
TYPE_NAMES = GENERIC_BUILTINS | {"int", "float", "str", "bytes", "bool", "object"}


def is_type(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or (
        isinstance(node, ast.Name) and node.id in TYPE_NAMES
    )


def newer_than_the_floor(tree: ast.AST) -> list[tuple[int, str]]:
    """Run-time constructs of Python 3.9+ that ruff's syntax check cannot see."""
    found = []
    annotations = annotation_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "zip":
            if any(keyword.arg == "strict" for keyword in node.keywords):
                found.append((node.lineno, "zip(strict=) (3.10)"))
        elif isinstance(node, ast.Attribute) and node.attr in ("removeprefix", "removesuffix"):
            found.append((node.lineno, f"str.{node.attr} (3.9)"))
        elif id(node) in annotations:
            continue
        elif (
            isinstance(node, ast.Subscript) and getattr(node.value, "id", None) in GENERIC_BUILTINS
        ):
            found.append((node.lineno, f"{ast.unparse(node)} evaluated (3.9)"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            if is_type(node.left) or is_type(node.right):
                found.append((node.lineno, f"{ast.unparse(node)} evaluated (3.10)"))
    return found


def test_the_scan_finds_what_it_looks_for():
    source = (
        "from __future__ import annotations\n"
        "Alias = tuple[int, str]\n"
        "def f(x: list[int] | None) -> dict[str, int]:\n"
        "    ok: tuple[int] | None = None\n"
        "    isinstance(x, int | str), {1} | {2}, 1 | 2\n"
        "    zip(x, x, strict=True)\n"
        "    return 'ab'.removeprefix('a')\n"
    )
    assert sorted(line for line, _ in newer_than_the_floor(ast.parse(source))) == [2, 5, 6, 7]


@pytest.mark.parametrize("path", IN_CONTAINER, ids=lambda p: str(p.relative_to(REPO)))
def test_no_run_time_construct_newer_than_the_floor(path):
    found = newer_than_the_floor(ast.parse(path.read_text(), str(path)))
    assert not found, f"{path.relative_to(REPO)}: " + "; ".join(f"line {n}: {w}" for n, w in found)
