"""A volume KMS key for an instance type with NVMe instance storage is refused before any AWS
call, where CreateTrainingJob would refuse it after the upload; with an EBS volume it is sent.

Which families train on instance storage is the catalogue's ``instance_storage``; the installed
SDK's own rule (``volume_size_supported``: no EBS volume to size or encrypt) must agree with it
for every instance type the catalogue states it for (v3's rule: v2's predates the newest
families).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from smdist import catalog

from .conftest import only

KEY = "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch_ddp.yaml"


# v3 only: v2's copy of the rule, frozen with its maintenance, predates g7e, p6-b200 and trn2.
@only("v3")
def test_the_catalogue_agrees_with_the_sdk_on_which_types_have_no_ebs_volume(sdk_line):
    from sagemaker.core.common_utils import volume_size_supported as ebs_volume

    stated = [
        info
        for info in map(catalog.instance, catalog.known_instance_types())
        if info.training and info.instance_storage is not None
    ]
    assert {info.family for info in stated if info.instance_storage == "nvme"} >= {
        "p4d", "g4dn", "g5", "p5", "trn1",
    }  # fmt: skip
    disagree = [
        info.instance_type
        for info in stated
        if (info.instance_storage == "nvme") == ebs_volume(info.instance_type)
    ]
    assert disagree == []
    unstated = {
        info.family
        for info in map(catalog.instance, catalog.known_instance_types())
        if info.training and info.instance_storage is None and not ebs_volume(info.instance_type)
    }
    assert unstated == set()  # every type the SDK gives no EBS volume is stated nvme


def validate(tmp_path: Path, instance_type: str) -> subprocess.CompletedProcess:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["cluster"]["instance_type"] = instance_type
    data["kms"] = {"volume_key_id": KEY}
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(data))
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(job)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("instance_type", ["ml.g5.xlarge", "ml.p4d.24xlarge", "ml.g6e.xlarge"])
def test_a_volume_key_on_nvme_storage_exits_2_naming_the_field_and_what_to_do(
    tmp_path, instance_type, sdk_line
):
    done = validate(tmp_path, instance_type)
    assert done.returncode == 2, done.stderr
    assert "kms.volume_key_id" in done.stderr and instance_type in done.stderr
    assert "NVMe instance storage" in done.stderr and "kms.output_key_id" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_volume_key_on_an_ebs_volume_is_valid(tmp_path, sdk_line):
    done = validate(tmp_path, "ml.c5.2xlarge")
    assert done.returncode == 0, done.stderr


def test_a_volume_key_on_an_ebs_volume_reaches_the_request(sdk_line):
    from smdist.backends import sagemaker as backend
    from smdist.planning.plan import plan
    from smdist.spec.job import JobSpec

    data = yaml.safe_load(EXAMPLE.read_text())
    data["cluster"]["instance_type"] = "ml.c5.2xlarge"
    data["kms"] = {"volume_key_id": KEY}
    shown = backend.dry_run(
        plan(JobSpec.from_dict(data)),
        bucket="smdist-lines-test-bucket",
        role="arn:aws:iam::123456789012:role/SmdistTestRole",
        region="us-west-2",
    )
    assert shown.request["ResourceConfig"]["VolumeKmsKeyId"] == KEY
