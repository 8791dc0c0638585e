"""Under SDK v3 the script gets the hyperparameters SDK v2's training toolkit gives it.

The ``sagemaker`` backend (SDK v3 installed) submits a script that prints its argv and its
``SM_HPS`` / ``SM_HP_*``; the emulated container runs the request verbatim on one host (v3's
real ``sm_train.sh`` and drivers). What the toolkit gives for the same values, as SDK v2 sends
them, is recorded in tests/fixtures/sagemaker_training_hyperparameters.json (sagemaker-training
5.1.4; tests/unit/test_v3_hyperparameters.py records it again when the toolkit is at hand).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smdist.backends import sagemaker as backend
from smdist.backends.sagemaker.v3.hyperparameters import for_v3_drivers
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, ROLE
from .emulated_container import run_request
from .test_v3_runs import describe

# Real jobs: training frameworks run in emulated containers (`-m "not integration"` skips).
pytestmark = pytest.mark.integration

RECORDED = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "sagemaker_training_hyperparameters.json")
    .read_text()
)  # fmt: skip
VALUES = RECORDED["hyperparameters"]  # "1.10", "true", "null", "1e3", "0x10", a dict, ...
TOOLKIT_ARGV = RECORDED["argv"]
TOOLKIT_HPS = json.loads(RECORDED["SM_HPS"])
REPORT = "HP-REPORT "
SCRIPT = f"""\
import json, os, sys
report = {{"argv": sys.argv[1:], "SM_HPS": os.environ.get("SM_HPS"),
          "SM_HP": {{k: v for k, v in os.environ.items() if k.startswith("SM_HP_")}}}}
print({REPORT!r} + json.dumps(report), flush=True)
"""
PT = {"framework_version": "2.3.0", "py_version": "py311"}
TF = {"framework_version": "2.14", "py_version": "py310"}


_REPORTS: dict[str, dict] = {}  # one emulated run per driver, whichever test asks first


def run_script(strategy: dict, code: dict, tmp_path, boto_session, captured, python) -> dict:
    """Submit SCRIPT with VALUES on one host; run the request; the script's report."""
    key = json.dumps(strategy, sort_keys=True)
    if key not in _REPORTS:
        _REPORTS[key] = _run_script(strategy, code, tmp_path, boto_session, captured, python)
    return _REPORTS[key]


def _run_script(strategy: dict, code: dict, tmp_path, boto_session, captured, python) -> dict:
    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text(SCRIPT)
    spec = JobSpec.from_dict(
        {
            "name": "v3-hps",
            "strategy": strategy,
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 1},
            "code": {"entry_point": "train.py", "source_dir": str(source), **code},
            "hyperparameters": VALUES,
        }
    )
    backend.launch(plan(spec), bucket=BUCKET, role=ROLE, boto_session=boto_session)
    (request,) = captured
    (result,) = run_request(
        request, boto_session.client("s3"), hosts=1, python=python, root=tmp_path / "hosts",
        timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, describe([result])
    (line,) = [line for line in result.stdout.splitlines() if line.startswith(REPORT)]
    return json.loads(line[len(REPORT) :])


DDP = {"kind": "pytorch_ddp", "launcher": "torchrun", "processes_per_host": 1}


def test_v3s_torchrun_driver_gives_the_script_the_toolkits_arguments(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    report = run_script(DDP, PT, tmp_path, boto_session, captured_requests, container_python)
    assert report["argv"] == TOOLKIT_ARGV


def test_v3s_mpi_driver_would_give_the_script_the_toolkits_arguments(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    """v3's MPI driver builds the script's arguments with the function its Torchrun driver uses,
    from the same SM_HPS; it cannot run here (it needs sshd and mpi4py, and smdist never picks
    it: Horovod and SMP v1 go through smdist's driver), so its function is given the SM_HPS that
    v3's sm_train.sh exported in the emulated container."""
    from sagemaker.train.container_drivers.common.utils import hyperparameters_to_cli_args

    report = run_script(DDP, PT, tmp_path, boto_session, captured_requests, container_python)
    assert hyperparameters_to_cli_args(json.loads(report["SM_HPS"])) == TOOLKIT_ARGV


def test_under_v3s_drivers_sm_hps_holds_v2s_value_where_v3_can_carry_it(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    report = run_script(DDP, PT, tmp_path, boto_session, captured_requests, container_python)
    hps = json.loads(report["SM_HPS"])
    # What v3 cannot decode twice and still give the script v2's argument travels as that
    # argument's text (README: "Hyperparameters under SDK v3").
    as_text = {
        "use_amp": "True",
        "nothing": "",
        "options": "depth=2,mode=fast",
        "decimal_text": '"1.10"',
        "exponent_text": '"1e3"',
        "tags": '"[\\u0027a\\u0027, \\u0027b\\u0027]"',
    }
    assert {name: hps[name] for name in as_text} == as_text
    kept = sorted(set(VALUES) - set(as_text))
    assert {name: hps[name] for name in kept} == {name: TOOLKIT_HPS[name] for name in kept}
    assert kept == sorted(n for n in VALUES if for_v3_drivers(VALUES[n]) == json.dumps(VALUES[n]))
    for name in kept:  # SM_HP_<NAME>: the same value (v3 writes JSON with spaces)
        v3_variable = report["SM_HP"]["SM_HP_" + name.replace("-", "_").upper()]
        v2_variable = RECORDED["SM_HP"]["SM_HP_" + name.upper()]
        if isinstance(VALUES[name], str):
            assert v3_variable == v2_variable
        else:
            assert json.loads(v3_variable) == json.loads(v2_variable)


def test_smdists_driver_gives_the_script_the_toolkits_arguments_and_variables(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    report = run_script(
        {"kind": "mwms"}, TF, tmp_path, boto_session, captured_requests, container_python
    )
    assert report["argv"] == TOOLKIT_ARGV
    assert report["SM_HPS"] == RECORDED["SM_HPS"]
    assert {name: report["SM_HP"][name] for name in RECORDED["SM_HP"]} == RECORDED["SM_HP"]
