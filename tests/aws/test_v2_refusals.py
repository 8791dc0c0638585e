"""What SDK v2's estimators cannot send is refused before any AWS call, naming the spec field
and the SDK line that can send it: ``smdist submit --dry-run`` exits 2 (an invalid job), and a
launch uploads nothing and creates no job.

SDK v2 has no estimator argument for ``ResourceConfig.InstancePreferences`` or ``MlflowConfig``,
and under network isolation it adds the code channel itself with no ``InstanceGroupNames``,
which SageMaker refuses beside channels routed to instance groups.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conformance_cases import MLFLOW_SERVER, PT, VPC, capacity_cluster, heterogeneous_job
from moto_server import s3_objects, unreachable_aws

from smdist.backends import sagemaker as backend
from smdist.cli.app import main
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE

ACCOUNT = ["--bucket", BUCKET, "--role", ROLE, "--region", REGION]
SDK_V3 = "smdist[sagemaker]"


def job(**more: Any) -> dict[str, Any]:
    return {
        "name": "refused",
        "strategy": {"kind": "pytorch_ddp"},
        "cluster": {"instance_type": "ml.p5.48xlarge", "instance_count": 2},
        "code": PT,
        "max_run": 3600,
        **more,
    }


def isolated_groups() -> dict[str, Any]:
    data = heterogeneous_job("refused", BUCKET).model_dump(exclude_none=True)
    data["network"] = {**VPC, "isolation": True}
    return data


REFUSED = {
    "cluster.instance_preferences": job(cluster=capacity_cluster("preferences")),
    "mlflow": job(mlflow={"tracking_server_arn": MLFLOW_SERVER, "experiment": "resnet"}),
    "network.isolation": isolated_groups(),
}


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("field", REFUSED)
def test_dry_run_exits_2_naming_the_field(field, tmp_path, capsys, monkeypatch):
    unreachable_aws(monkeypatch, tmp_path)  # any AWS call would fail the test
    code = main(["submit", str(write(tmp_path, REFUSED[field])), "--dry-run", *ACCOUNT])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.out == ""
    line = next(line for line in captured.err.splitlines() if field in line)
    assert "SDK v2" in line and SDK_V3 in line


@pytest.mark.parametrize("field", REFUSED)
def test_launch_refuses_before_any_aws_call(field, boto_session, captured_requests):
    job_plan = plan(JobSpec.from_dict(REFUSED[field]))  # smdist's own checks pass it
    with pytest.raises(SpecError) as refused:
        backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    assert [p.path for p in refused.value.problems] == [field]
    assert captured_requests == []
    assert s3_objects(boto_session) == {}  # not even the code was uploaded


def test_every_refusal_is_reported_at_once(tmp_path, capsys, monkeypatch):
    unreachable_aws(monkeypatch, tmp_path)
    data = job(
        cluster=capacity_cluster("preferences"),
        mlflow={"tracking_server_arn": MLFLOW_SERVER},
    )
    assert main(["submit", str(write(tmp_path, data)), "--dry-run", *ACCOUNT]) == 2
    err = capsys.readouterr().err
    assert "cluster.instance_preferences" in err and "mlflow" in err
