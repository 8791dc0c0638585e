"""`import smdist` stays light: no SDK, AWS client or framework is imported."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sagemaker", "boto3", "botocore", "torch", "tensorflow", "horovod")


def test_import_and_plan_load_no_heavy_modules():
    code = (
        "import sys, smdist\n"
        "smdist.plan(smdist.load('examples/smp_v1.yaml'))\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_runtime_imports_without_pydantic():
    code = (
        "import sys\n"
        "import smdist.runtime.args, smdist.runtime.metrics, smdist.runtime.paths\n"
        "print('pydantic' in sys.modules, 'yaml' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False False", result.stderr


def test_public_functions_are_not_shadowed_by_submodules():
    code = (
        "import smdist, smdist.planning.plan, smdist.backends, smdist.spec.job\n"
        "print(callable(smdist.plan), callable(smdist.fit), callable(smdist.load))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "True True True", result.stderr
