"""`import smdist` stays light: no SDK, AWS client or framework is imported."""

from __future__ import annotations

import json
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


def _planned_modules(example: str) -> dict[str, object]:
    """Which strategy and tuning modules, and which models, planning ``example`` built."""
    code = (
        "import json, sys, smdist\n"
        f"smdist.plan(smdist.load({example!r}))\n"
        "modules = sorted(m for m in sys.modules if m.startswith(('smdist.strategies.', "
        "'smdist.spec.tuning')))\n"
        "built = sorted(n for n in ('SMPv1', 'SMPv2') if 'smdist.strategies.sdmp' in sys.modules "
        "and getattr(sys.modules['smdist.strategies.sdmp'], n).__pydantic_complete__)\n"
        "print(json.dumps({'modules': modules, 'built': built}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_job_builds_only_the_strategy_its_kind_names_and_no_tuning_models():
    loaded = _planned_modules("examples/pytorch_ddp.yaml")["modules"]
    others = ("mwms", "horovod", "sddp", "sdmp", "smp_v1", "smp_v2", "parameter_server")
    assert "smdist.strategies.ddp" in loaded
    assert not [m for m in loaded if m.rsplit(".", 1)[-1] in others]
    assert "smdist.spec.tuning" not in loaded


def test_an_smp_v1_job_builds_smp_v1_only():
    assert _planned_modules("examples/smp_v1.yaml")["built"] == ["SMPv1"]


def test_a_job_with_tuning_validates_its_section_with_the_tuning_models():
    assert "smdist.spec.tuning" in _planned_modules("examples/tuning/pytorch_ddp.yaml")["modules"]
