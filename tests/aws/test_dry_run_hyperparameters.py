"""The request a job becomes carries the user's hyperparameters and only SageMaker's own.

For every strategy (both DDP launchers, both SMP versions), the ``smdist submit --dry-run``
request's HyperParameters are the job file's plus the ``sagemaker_*`` keys the SDK adds (and
``model_dir`` for TensorFlow, ``mp_parameters`` for SMP, which the SDK adds too). smdist's own
settings travel in the Environment as ``SMDIST_*`` variables, so a script that parses its
arguments strictly sees nothing it did not ask for — on SageMaker as locally.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from smdist.cli.app import main

from .conftest import BUCKET, REGION, ROLE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
JOBS = sorted(path.stem for path in EXAMPLES.glob("*.yaml"))


def test_every_strategy_kind_and_launcher_is_covered():
    kinds = {
        yaml.safe_load((EXAMPLES / f"{job}.yaml").read_text())["strategy"]["kind"] for job in JOBS
    }
    assert kinds == {"mwms", "horovod", "pytorch_ddp", "sddp", "sdmp", "parameter_server"}
    assert {"pytorch_ddp", "pytorch_ddp_torch_distributed", "smp_v1", "smp_v2"} <= set(JOBS)


@pytest.mark.parametrize("job", JOBS)
def test_hyperparameters_are_the_users_plus_sagemakers_own(job, tmp_path, capsys):
    data = yaml.safe_load((EXAMPLES / f"{job}.yaml").read_text())
    data.update(role=ROLE, region=REGION)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))

    assert main(["submit", str(path), "--dry-run", "--bucket", BUCKET]) == 0
    request = json.loads(capsys.readouterr().out)["CreateTrainingJob"]

    sent = request["HyperParameters"]
    users = data.get("hyperparameters", {})
    assert {name: json.loads(sent[name]) for name in users} == users
    tensorflow = "tensorflow" in (data["strategy"].get("framework"), data["strategy"]["kind"])
    tensorflow = tensorflow or data["strategy"]["kind"] in ("mwms", "parameter_server")
    sagemakers_own = {"model_dir"} if tensorflow else set()
    if data["strategy"]["kind"] == "sdmp":
        sagemakers_own.add("mp_parameters")
    added = set(sent) - set(users)
    assert {name for name in added if not name.startswith("sagemaker_")} == sagemakers_own
    environment = request.get("Environment", {})
    assert all(
        name.startswith("SMDIST_")
        for name in environment
        if name not in data.get("environment", {})
    )
    if (
        data["strategy"]["kind"] == "pytorch_ddp"
        and data["strategy"].get("launcher", "torchrun") == "torchrun"
    ):
        assert environment["SMDIST_TRAINING_SCRIPT"] == "pytorch_ddp.py"
