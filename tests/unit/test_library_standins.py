"""SageMaker's library names on the emulated hosts (``smdist.backends.local.standins``): the
stand-ins answer them, a real library wins, a TensorFlow SMP v1 script is refused with why,
another ``sitecustomize`` still runs, and no SageMaker job ever ships them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.backends.local.standins import SITE_DIR
from smdist.checks.reading import load
from smdist.packaging import bundle as packaging
from smdist.planning.plan import plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REPO = Path(__file__).resolve().parents[2]


def _python(code: str, *path: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter whose PYTHONPATH is the emulated hosts' (plus ``path``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), *map(str, path), str(REPO)])
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("name", "attribute"),
    [
        ("smdistributed.modelparallel.torch", "DistributedModel"),
        ("smdistributed.dataparallel.torch.distributed", "get_local_rank"),
        ("smdistributed.dataparallel.torch.parallel.distributed", "DistributedDataParallel"),
        ("torch.sagemaker", "init"),
    ],
)
def test_the_libraries_names_answer_with_the_stand_ins(name, attribute):
    done = _python(f"import {name} as m; print(m.SMDIST_STAND_IN, callable(m.{attribute}))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_torch_smddp_registers_the_smddp_backend():
    code = (
        "import torch.distributed as dist\n"
        "import smdistributed.dataparallel.torch.torch_smddp\n"
        "print('SMDDP' in dist.Backend._plugins)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_a_real_library_wins(tmp_path):
    real = tmp_path / "real" / "smdistributed" / "modelparallel"
    real.mkdir(parents=True)
    for package in (real.parent, real):
        (package / "__init__.py").write_text("")
    (real / "torch.py").write_text("REAL = True\n")
    done = _python(
        "import smdistributed.modelparallel.torch as smp; print(getattr(smp, 'REAL', False))",
        tmp_path / "real",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_tensorflow_smp_v1_is_refused_with_why():
    done = _python("import smdistributed.modelparallel.tensorflow")
    assert done.returncode != 0
    assert "has no local stand-in" in done.stderr and "sagemaker-local" in done.stderr


def test_names_outside_the_libraries_are_untouched():
    done = _python("import smdistributed.nothing_like_this")
    assert "ModuleNotFoundError" in done.stderr


def test_another_sitecustomize_still_runs(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS = 1\n")
    done = _python("import builtins; print(getattr(builtins, 'THEIRS', 0))", theirs)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"


@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_no_sagemaker_job_ships_a_stand_in(example):
    shipped = [arcname for _, arcname in packaging.bundle(plan(load(EXAMPLES / f"{example}.yaml")))]
    assert shipped  # the ready entry points and smdist's runtime
    leaked = [
        name
        for name in shipped
        if name.split("/")[0] in {"smdistributed", "torch", "_smdist_standins"}
        or name.endswith("sitecustomize.py")
        or "standins" in name
    ]
    assert leaked == []
