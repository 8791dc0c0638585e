"""The SageMaker API's own limits come from the dated service-model snapshot, and match botocore."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import resources

import pytest

from smdist.backends import job_names
from smdist.catalog import api, snapshot, wire
from smdist.spec import api_shapes as spec

SNAPSHOT = json.loads(
    resources.files("smdist.catalog").joinpath("sagemaker_api.json").read_text(encoding="utf-8")
)


def test_snapshot_is_dated_and_sourced():
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", SNAPSHOT["snapshot_date"])
    assert SNAPSHOT["snapshot_date"] == api.snapshot_date()
    assert SNAPSHOT["botocore_version"] in SNAPSHOT["source"]
    assert SNAPSHOT["generated_by"] == "python -m smdist.catalog.snapshot"
    assert set(SNAPSHOT["fields"]) == set(snapshot.FIELDS)


def test_snapshot_equals_what_the_installed_botocore_says():
    botocore = pytest.importorskip("botocore", reason="botocore is not installed")
    fresh = snapshot.build_snapshot(SNAPSHOT["snapshot_date"])
    stale = {
        key: (SNAPSHOT[key], fresh[key])
        for key in ("fields", "regions", "api_version")
        if SNAPSHOT[key] != fresh[key]
    }
    assert not stale, (
        f"sagemaker_api.json (botocore {SNAPSHOT['botocore_version']}) differs from the "
        f"installed botocore {botocore.__version__}: run python -m smdist.catalog.snapshot"
    )


def test_snapshot_script_writes_the_same_file(tmp_path):
    pytest.importorskip("botocore", reason="botocore is not installed")
    target = tmp_path / "api.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "smdist.catalog.snapshot",
            "--date",
            SNAPSHOT["snapshot_date"],
            "--output",
            str(target),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written == snapshot.build_snapshot(SNAPSHOT["snapshot_date"])


def test_wire_limits_are_the_api_limits():
    fields = SNAPSHOT["fields"]
    assert wire.MAX_HYPERPARAMETERS == fields["hyperparameters"]["max"]
    assert wire.MAX_KEY_LENGTH == fields["hyperparameter_key"]["max"]
    assert wire.MAX_VALUE_LENGTH == fields["hyperparameter_value"]["max"]
    assert wire.MAX_ENVIRONMENT_ENTRIES == fields["environment"]["max"]
    assert wire.MAX_ENVIRONMENT_KEY_LENGTH == fields["environment_key"]["max"]
    assert wire.MAX_ENVIRONMENT_VALUE_LENGTH == fields["environment_value"]["max"]


def test_spec_limits_are_the_api_limits():
    fields = SNAPSHOT["fields"]
    assert spec.KEEP_ALIVE_LIMIT == fields["keep_alive"]["max"] == 21600
    assert spec.MAX_RUN_LIMIT == fields["max_runtime"]["documented_max"] == 28 * 24 * 3600
    assert spec.S3_URI_LIMIT == fields["s3_uri"]["max"]


def test_job_name_prefix_leaves_room_for_the_backend_suffix():
    assert spec.JOB_NAME_PREFIX_LIMIT + job_names.SUFFIX_LENGTH == api.field("job_name").limit
    assert job_names.MAX_JOB_NAME == api.field("job_name").limit


def test_spec_enumerations_match_the_api():
    from typing import get_args

    from smdist.spec.job import Input

    distribution = get_args(Input.model_fields["distribution"].annotation)
    assert set(distribution) == set(api.field("s3_data_distribution").enum)
    literal = next(a for a in get_args(Input.model_fields["input_mode"].annotation) if get_args(a))
    assert set(get_args(literal)) == set(api.field("input_mode").enum)


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        (spec.JOB_NAME, "a-b-1", "-a"),
        (spec.CHANNEL_NAME, "train.v1_x-y", "tr ain"),
        (spec.ENV_NAME, "_MY_VAR1", "1VAR"),
        (spec.ROLE_ARN, "arn:aws-cn:iam::123456789012:role/a/b", "arn:aws:iam::12345:role/x"),
        (spec.S3_URI, "s3://my-bucket/key with spaces", "s3://My_Bucket/key"),
        (spec.SUBNET, "subnet-0123456789abcdef0", "subnet-xyz"),
        (spec.SECURITY_GROUP, "sg-01234567", "sg-0123456789abcdef01234567"),
        (spec.KMS_KEY, "alias/my-key_1", "alias/my key"),
    ],
)
def test_api_patterns_accept_and_refuse(pattern, good, bad):
    assert pattern.match(good)
    assert not pattern.match(bad)


def test_api_lengths_bound_the_patterns():
    assert spec.CHANNEL_NAME.match("c" * 64) and not spec.CHANNEL_NAME.match("c" * 65)
    assert spec.ENV_NAME.match("E" * 512) and not spec.ENV_NAME.match("E" * 513)
    assert spec.HYPERPARAMETER_NAME.match("h" * 256)
    assert not spec.HYPERPARAMETER_NAME.match("h" * 257)
    long_key = "s3://bucket/" + "k" * (spec.S3_URI_LIMIT - len("s3://bucket/"))
    assert spec.S3_URI.match(long_key) and not spec.S3_URI.match(long_key + "k")


def test_tag_patterns_with_unicode_classes_match_like_the_service():
    key = api.field("tag_key")
    assert key.matches("Team Ünïcode 名前 ٣ _.:/=+-@")
    assert not key.matches("semi;colon")
    assert not key.matches("")  # min 1
    assert not key.matches("k" * 129)
    with pytest.raises(ValueError, match="Unicode classes"):
        _ = key.regex


def test_training_instance_types_are_the_api_enum():
    assert api.training_instance_types() == frozenset(SNAPSHOT["fields"]["instance_type"]["enum"])
    assert "ml.trn2.48xlarge" in api.training_instance_types()
    assert not any(t.startswith("ml.inf") for t in api.training_instance_types())


def test_regions_cover_every_partition():
    regions = api.regions()
    assert list(regions) == sorted(set(regions))
    assert {"us-west-2", "cn-north-1", "us-gov-west-1"} <= set(regions)
    assert api.partition_of("cn-north-1") == "aws-cn"
    assert api.partition_of("us-westt-2") is None


def test_unknown_field_names_the_known_ones():
    with pytest.raises(KeyError, match="keep_alive"):
        api.field("keep_alive_period")
