"""smdist's in-container code runs on every Python from PYTHON_FLOOR to PYTHON_CEILING.

The code ships with the job (``smdist.packaging.bundle``: the ready entry points, ``smdist/runtime``
under a stub ``smdist`` package, smdist's v3 driver) and runs on the training image's Python,
without pydantic or anything else smdist needs where jobs are planned. For each interpreter of
the range found here (pyenv's, else ``python3.X`` on PATH), ``runtime_python_probe.py`` imports
every module of the staged bundle and runs the container contract: TF_CONFIG, the SM_* set, the
script's argv, the mpirun commands, smdist's v3 driver and torchrun launcher end to end. A
module may go unimported only for a framework that interpreter lacks; the contract's results
must equal this interpreter's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.packaging import bundle as packaging
from smdist.planning.plan import plan
from smdist.runtime import PYTHON_CEILING, PYTHON_FLOOR, PYTHON_RANGE
from smdist.spec.job import JobSpec

# One worker runs the whole module, so the bundle and the reference are made once (xdist).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("runtime_pythons")]

HERE = Path(__file__).resolve().parent
PROBE = HERE / "runtime_python_probe.py"
DRIVER = HERE.parents[1] / "smdist" / "drivers" / "smdist_driver.py"
MAJOR, FLOOR_MINOR = PYTHON_FLOOR
MINORS = range(FLOOR_MINOR, PYTHON_CEILING[1] + 1)


def _reports(python: str, minor: int) -> bool:
    try:
        found = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[1])"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0 and found.stdout.strip() == str(minor)


def find_python(minor: int) -> str | None:
    """An interpreter of 3.<minor>: pyenv's newest patch release, else python3.<minor> on PATH
    (a pyenv shim of a version not installed answers with an error, hence the check)."""
    versions = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    installed = sorted(
        versions.glob(f"{MAJOR}.{minor}.*/bin/python"),
        key=lambda path: [int(p) for p in path.parts[-3].split(".") if p.isdigit()],
    )
    for candidate in [*reversed(installed), shutil.which(f"python{MAJOR}.{minor}")]:
        if candidate and _reports(str(candidate), minor):
            return str(candidate)
    return None


def probe(python: str, bundle: Path, work: Path, *options: str) -> dict:
    work.mkdir()
    # -I: no PYTHONPATH, no user site-packages: only the bundle provides smdist.
    run = subprocess.run(
        [python, "-I", str(PROBE), str(bundle), str(work), *options],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((work / "report.json").read_text())
    assert report["smdist"] == "smdist/__init__.py"  # the bundle's stub, not an installed smdist
    return report


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """The code directory of a job on the ready entry points, as it ships, and v3's driver."""
    spec = JobSpec.from_dict(
        {
            "name": "pythons",
            "strategy": {"kind": "pytorch_ddp"},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
            # any image: what ships does not depend on it
            "code": {"image_uri": "111122223333.dkr.ecr.us-west-2.amazonaws.com/train:1"},
        }
    )
    code = tmp_path_factory.mktemp("bundle") / "code"
    packaging.stage(plan(spec), code)
    shutil.copyfile(DRIVER, code / DRIVER.name)  # v3's sm_drivers channel: beside the code
    return code


@pytest.fixture(scope="module")
def reference(bundle, tmp_path_factory) -> dict:
    """The contract's results on the interpreter running the tests."""
    report = probe(sys.executable, bundle, tmp_path_factory.mktemp("ref") / "w", "--contract-only")
    assert isinstance(report["contract"], dict), report["contract"]
    return report["contract"]


def test_the_probe_runs_the_contract(reference):
    """What every interpreter is compared with is the contract, not an empty answer."""
    workers = ["algo-1:8890", "algo-2:8890"]
    tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": 1}}
    assert reference["tf_config"] == reference["ensure_tf_config"] == tf_config
    assert "1 ports for 2 hosts" in reference["tf_config_error"]
    argv = ["--epochs", "3", "--flag", "True", "-k", "1", "--layers", "[64, 32]", "--lr", "0.1",
            "--name", "plain text", "--opt", "a=x,b=2"]  # fmt: skip
    assert reference["argv"] == argv
    assert json.loads(reference["sm_variables"]["SM_USER_ARGS"]) == argv
    for launcher in ("program", "tf_config"):
        ran = reference[f"driver_{launcher}"]
        assert ran["exit"] == 0 and ran["ran"]["argv"] == ["record.py", *argv]
        assert ran["ran"]["env"]["SM_CURRENT_HOST"] == "algo-2"
    assert json.loads(reference["driver_tf_config"]["ran"]["env"]["TF_CONFIG"]) == tf_config
    assert reference["command_mpirun"][:3] == ["mpirun", "--host", "algo-1:4,algo-2:4"]
    launched = reference["launcher"]
    assert launched["exit"] == 0 and "--max_restarts" in launched["ran"]["argv"]
    assert reference["environments"]["slurm_srun.json"][0] == "slurm"


@pytest.mark.parametrize("minor", MINORS, ids=[f"python{MAJOR}.{m}" for m in MINORS])
def test_in_container_code_runs_on(minor, bundle, reference, tmp_path):
    python = find_python(minor)
    if python is None:
        pytest.skip(f"no Python {MAJOR}.{minor} here (pyenv or python{MAJOR}.{minor} on PATH)")
    report = probe(python, bundle, tmp_path / "work")
    assert report["python"] == [MAJOR, minor]
    imports = report["imports"]
    shipped = sorted((bundle / "smdist" / "runtime").rglob("*.py"))
    entry_points = [p for p in bundle.glob("*.py") if p.name != DRIVER.name]
    assert len(imports) == len(shipped) + len(entry_points)
    failed = {name: result for name, result in imports.items() if result.startswith("FAILED")}
    assert not failed, json.dumps(failed, indent=1)
    assert imports["smdist.runtime.v3_driver"] == imports["launch_torchrun.py"] == "ok"
    assert report["contract"] == reference


def test_below_the_floor_the_runtime_says_what_it_needs(bundle):
    """An image below the range (one named by code.image_uri, which the catalogue does not
    check) fails with the range, not with a SyntaxError deep in a module."""
    minor = FLOOR_MINOR - 1
    python = find_python(minor)
    if python is None:
        pytest.skip(f"no Python {MAJOR}.{minor} here")
    code = "import sys; sys.path.insert(0, sys.argv[1]); import smdist.runtime.launcher"
    run = subprocess.run(
        [python, "-I", "-c", code, str(bundle)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode != 0
    assert f"smdist's in-container code runs on {PYTHON_RANGE}" in run.stderr, run.stderr
    assert "SyntaxError" not in run.stderr
