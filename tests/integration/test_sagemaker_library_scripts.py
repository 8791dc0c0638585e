"""Scripts written for SageMaker's own libraries run unchanged on the local backend.

``user_scripts/sagemaker_libraries/*.py`` import the libraries under their real names, as
AWS documents them: SMDDP's modern API (``torch_smddp`` + ``backend="smddp"``) and its older
one (``smdistributed.dataparallel.torch.distributed`` and its ``DistributedDataParallel``),
SMP v1 (``smdistributed.modelparallel.torch``) and SMP v2 (``torch.sagemaker``). None of those
libraries is installed here: on the emulated hosts smdist's stand-ins answer the names
(``smdist.backends.local.standins``). Each script runs through ``smdist run`` on 2 hosts x 2
processes, reports what it saw (``sm-library {json}`` per rank) and packs a model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_local_backend import Run, smdist_run, tar_names

SCRIPTS = Path(__file__).resolve().parent / "user_scripts" / "sagemaker_libraries"
pytestmark = [pytest.mark.integration, pytest.mark.torch]


def _job(tmp_path: Path, script: str, strategy: dict[str, Any], instance_type: str, **extra):
    code = tmp_path / "code"
    code.mkdir()
    shutil.copy(SCRIPTS / script, code / "train.py")
    spec = {
        "name": script.removesuffix(".py").replace("_", "-"),
        "strategy": strategy,
        "cluster": {"instance_type": instance_type, "instance_count": 2},
        "code": {"entry_point": "train.py", "source_dir": str(code)},
        **extra,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def reports(run: Run) -> dict[int, dict[str, Any]]:
    found = {}
    for line in run.output.splitlines():
        _, marker, text = line.partition("sm-library ")
        if marker:
            report = json.loads(text)
            found[report["rank"]] = report
    return found


def _completed(run: Run) -> dict[int, dict[str, Any]]:
    assert run.returncode == 0, run.output[-4000:]
    seen = reports(run)
    assert sorted(seen) == [0, 1, 2, 3], run.output[-4000:]
    assert {report["world"] for report in seen.values()} == {4}
    model = run.job_dir() / "output" / "model.tar.gz"
    assert "model.pt" in tar_names(model)
    return seen


SDDP = {"kind": "sddp"}


def test_smddp_modern_api_runs_unchanged(tmp_path):
    job = _job(tmp_path, "smddp_modern.py", SDDP, "ml.p4d.24xlarge", hyperparameters={"steps": 3})
    run = smdist_run(job, tmp_path, "--processes-per-host", "2")
    seen = _completed(run)
    assert sorted(r["local_rank"] for r in seen.values()) == [0, 0, 1, 1]
    assert len({r["weights"] for r in seen.values()}) == 1  # one replica, averaged gradients
    assert "smddp backend is a local stand-in running gloo collectives over 4 ranks" in run.output


def test_smddp_older_api_runs_unchanged(tmp_path):
    job = _job(tmp_path, "smddp_legacy.py", SDDP, "ml.p4d.24xlarge")
    run = smdist_run(job, tmp_path, "--processes-per-host", "2")
    seen = _completed(run)
    assert {r["rank_sum"] for r in seen.values()} == {6.0}
    assert {r["local_size"] for r in seen.values()} == {2}
    assert sorted(r["local_rank"] for r in seen.values()) == [0, 0, 1, 1]
    assert len({r["weights"] for r in seen.values()}) == 1
