"""The settings large jobs reach for, as a job file states them: each is in the JSON Schema,
each rule refuses a bad value naming the field (exit 2 from the CLI, before anything runs),
``plan`` shows what was set and prices what changes the cost."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conformance_cases import (  # noqa: E402, I001
    PT,
    TRAINING_PLAN,
    VPC,
    capacity_cluster,
    file_system_settings,
    heterogeneous_job,
    tracking_settings,
)

from smdist.checks.validation import check_spec  # noqa: E402
from smdist.errors import SpecError  # noqa: E402
from smdist.planning.plan import plan  # noqa: E402
from smdist.spec.job import JobSpec, json_schema  # noqa: E402

from cli_process import run_smdist  # noqa: E402

NEW = "2.13.0"  # cu133 builds: no Volta kernels


def job(**fields) -> dict:
    return {
        "name": "big",
        "strategy": {"kind": "pytorch_ddp"},
        "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        "code": PT,
        **fields,
    }


def errors(data: dict) -> list[str]:
    """Each error as ``field: message``, from loading or from the checks."""
    try:
        spec = JobSpec.from_dict(data)
    except SpecError as exc:
        return [str(p) for p in exc.problems]
    return [str(p) for p in check_spec(spec) if p.severity == "error"]


def test_every_setting_is_in_the_job_files_schema():
    schema = json.dumps(json_schema())
    for key in (
        "volume_size", "instance_groups", "training_plan", "instance_preferences", "placement",
        "ultraservers", "access_mode", "max_attempts", "infra_check", "remote_debug",
        "tensorboard", "tracking_server_arn", "run_name",
    ):  # fmt: skip
        assert f'"{key}"' in schema, key


def test_a_derived_type_and_count_never_reach_the_job_file():
    spec = heterogeneous_job("t", "bkt")
    assert (spec.cluster.instance_type, spec.cluster.instance_count) == ("ml.g5.xlarge", 2)
    assert spec.cluster.total_instance_count == 3
    dumped = yaml.safe_load(spec.to_yaml())["cluster"]
    assert "instance_type" not in dumped and "instance_count" not in dumped
    assert JobSpec.from_dict(yaml.safe_load(spec.to_yaml())) == spec
    again = spec.model_copy(update={"max_run": 60})  # a copy is read again, derived values too
    assert again.cluster.instance_count == 2


GROUP_A = {"name": "a", "instance_type": "ml.g5.xlarge"}
ONE_P5 = [{"instance_type": "ml.p5.48xlarge", "instance_count": 1}]


@pytest.mark.parametrize(
    ("cluster", "wanted"),
    [
        ({}, "states no instances"),
        (
            {"instance_type": "ml.g5.xlarge", "instance_groups": [GROUP_A]},
            "instance_type and instance_groups cannot be given together",
        ),
        (
            {"instance_preferences": ONE_P5, "instance_count": 2},
            "instance_count: cannot be given beside instance_preferences",
        ),
        (
            {"instance_preferences": ONE_P5, "training_plan": TRAINING_PLAN},
            "give each preference its own training_plan",
        ),
        (
            {"instance_groups": [GROUP_A, {**GROUP_A, "instance_type": "ml.c5.xlarge"}]},
            "names must be unique",
        ),
        ({"instance_type": "ml.g5.xlarge", "training_plan": "plan-1"}, "not a training plan ARN"),
        ({"instance_groups": [{"name": "a", "instance_type": "ml.g55.xlarge"}]}, "did you mean"),
        ({"instance_type": "ml.g5.xlarge", "volume_size": 0}, "cluster.volume_size"),
        ({"instance_groups": [{**GROUP_A, "name": f"g{i}"} for i in range(6)]}, "instance_groups"),
    ],
)  # fmt: skip
def test_cluster_forms_are_checked_naming_the_field(cluster, wanted):
    found = errors(job(cluster=cluster))
    assert any(wanted in line for line in found), found
    assert all(line.startswith("cluster") for line in found), found


@pytest.mark.parametrize(
    ("cluster", "wanted"),
    [
        ({"instance_type": "ml.g7e.2xlarge", "volume_size": 100}, "refuses VolumeSizeInGB"),
        ({"instance_type": "ml.g5.xlarge", "volume_size": 1000}, "at most 250"),
        ({"instance_type": "ml.p4d.24xlarge", "volume_size": 9000}, "at most 8000"),
    ],
)
def test_volume_size_is_bounded_by_the_instance_storage(cluster, wanted):
    found = errors(job(cluster=cluster))
    assert any(line.startswith("cluster.volume_size") and wanted in line for line in found), found


def test_volume_size_on_an_ebs_type_is_priced_and_shown():
    small = plan(JobSpec.from_dict(job(cluster={"instance_type": "ml.c5.2xlarge"})))
    big = plan(
        JobSpec.from_dict(job(cluster={"instance_type": "ml.c5.2xlarge", "volume_size": 730}))
    )
    assert big.cost.per_hour == pytest.approx(small.cost.per_hour + 730 * 0.14 / 730)
    assert ("volume", "730 GB per host") in big_rows(big)


def big_rows(job_plan) -> list[tuple[str, str]]:
    from smdist.planning.display import summary_rows

    return summary_rows(job_plan)


def test_groups_rules_name_the_strategy_and_channel_fields():
    hetero = heterogeneous_job("t", "bkt").model_dump(mode="json")
    assert errors(hetero) == []
    wrong = {**hetero, "strategy": {"kind": "pytorch_ddp", "instance_groups": ["gpus"]}}
    assert any(
        line.startswith("strategy.instance_groups: 'gpus' is not a group") for line in errors(wrong)
    )
    unnamed = {**hetero, "strategy": {"kind": "pytorch_ddp"}}
    assert any(
        line.startswith("strategy.instance_groups: name the one") for line in errors(unnamed)
    )
    mixed = {**hetero, "inputs": {**hetero["inputs"], "val": {"uri": "s3://bkt/val"}}}
    assert any(
        line.startswith("inputs.val.instance_groups: SageMaker takes every channel")
        for line in errors(mixed)
    )
    routed = {**hetero, "inputs": {"raw": {"uri": "s3://bkt/raw", "instance_groups": ["cpu"]}}}
    assert any(
        line.startswith("inputs.raw.instance_groups: 'cpu' is not a group")
        for line in errors(routed)
    )
    tf = {**hetero, "strategy": {"kind": "mwms"}, "code": {"framework_version": "2.14"}}
    assert any(line.startswith("cluster.instance_groups: the mwms strategy") for line in errors(tf))
    tf["strategy"] = {"kind": "mwms", "instance_groups": ["gpu"]}
    assert any(line.startswith("strategy.instance_groups: unknown key") for line in errors(tf))
    homogeneous = job(strategy={"kind": "pytorch_ddp", "instance_groups": ["gpu"]})
    assert any(
        line.startswith("strategy.instance_groups: names instance groups")
        for line in errors(homogeneous)
    )
    flat = job(inputs={"train": {"uri": "s3://bkt/t", "instance_groups": ["gpu"]}})
    assert any(
        line.startswith("inputs.train.instance_groups: routes a channel") for line in errors(flat)
    )


def test_groups_are_planned_on_the_distributed_group_and_priced_across_all():
    job_plan = plan(heterogeneous_job("t", "bkt"))
    assert job_plan.topology.world_size == 2  # the gpu group's 2 hosts x 1 GPU
    assert job_plan.cost.per_hour == pytest.approx(2 * 1.408 + 0.408 + 200 * 0.14 / 730, abs=0.01)
    rows = dict(big_rows(job_plan))
    assert rows["cluster"].startswith("data: 1 x ml.c5.2xlarge + gpu: 2 x ml.g5.xlarge")
    assert (
        rows["instance groups"]
        == "gpu run the distributed program; data run the script once per host"
    )
    assert rows["channel raw"] == "on data only"


def test_a_later_preference_is_checked_as_the_instance_type_at_its_own_field():
    cluster = {
        "instance_preferences": [
            {"instance_type": "ml.p5.48xlarge", "instance_count": 2},
            {"instance_type": "ml.p3.16xlarge", "instance_count": 2},
        ]
    }
    found = errors(job(cluster=cluster, code={"framework_version": NEW}))
    assert any(
        line.startswith("cluster.instance_preferences[1]") and "ml.p3.16xlarge" in line
        for line in found
    ), found
    fine = errors(job(cluster=cluster, code=PT))
    assert fine == []


def test_preferences_and_training_plans_are_shown_and_their_prices_noted():
    job_plan = plan(JobSpec.from_dict(job(cluster=capacity_cluster("preferences"))))
    rows = dict(big_rows(job_plan))
    assert rows["preference 1"] == f"2 x ml.p5.48xlarge, training plan {TRAINING_PLAN}"
    assert rows["preference 2"] == "2 x ml.p4d.24xlarge"
    assert "capacity from a training plan is paid when the plan is bought" in job_plan.cost.notes
    assert any("falls back to ml.p4d.24xlarge" in note for note in job_plan.cost.notes)


def test_placement_needs_an_ultraserver_type_and_counts_that_add_up():
    assert errors(job(cluster=capacity_cluster("ultraserver"))) == []
    off = {**capacity_cluster("ultraserver"), "instance_type": "ml.p5.48xlarge"}
    assert any(
        line.startswith("cluster.placement: places instances on UltraServers")
        for line in errors(job(cluster=off))
    )
    short = {**capacity_cluster("ultraserver"), "instance_count": 6}
    assert any(
        line.startswith("cluster.placement.ultraservers: place 4")
        for line in errors(job(cluster=short))
    )


def test_file_system_channels_need_a_vpc_and_file_mode():
    assert errors(job(**file_system_settings("bkt"))) == []
    no_vpc = {**file_system_settings("bkt"), "network": {}}
    assert any(
        line.startswith("network.subnets: file system channels (lustre, shared)")
        for line in errors(job(**no_vpc))
    )
    fast = {
        "inputs": {"l": {"uri": "fsx://fs-0123456789abcdef0/abcdefgh/x", "input_mode": "FastFile"}},
        "network": VPC,
    }
    assert any(line.startswith("inputs.l.input_mode") for line in errors(job(**fast)))
    sharded = {
        "inputs": {"l": {"uri": "efs://fs-0123456789abcdef0/x", "distribution": "ShardedByS3Key"}},
        "network": VPC,
    }
    assert any(line.startswith("inputs.l.distribution") for line in errors(job(**sharded)))
    s3_mode = {"inputs": {"l": {"uri": "s3://bkt/x", "access_mode": "rw"}}}
    assert any(line.startswith("inputs.l.access_mode") for line in errors(job(**s3_mode)))
    for uri, wanted in [
        ("fsx://fs-0123456789abcdef0", "names no directory"),
        ("fsx://fs-12/abcdefgh/x", "is not a file system id"),
        ("efs:/fs-0123456789abcdef0/x", "is not a file system location"),
    ]:
        found = errors(job(inputs={"l": uri}, network=VPC))
        assert any(line.startswith("inputs.l.uri") and wanted in line for line in found), found


def test_tracking_settings_are_bounded_and_shown():
    spec = JobSpec.from_dict(job(**tracking_settings("bkt")))
    rows = dict(big_rows(plan(spec)))
    assert rows["retries"] == "up to 3 on AWS-side failures"
    assert rows["tensorboard"] == "/opt/ml/output/tensorboard -> s3://bkt/tensorboard"
    assert rows["mlflow"].endswith("mlflow-tracking-server/team (resnet/r1)")
    for bad, field in [
        ({"retry": {"max_attempts": 31}}, "retry.max_attempts"),
        ({"retry": {"max_attempts": 0}}, "retry.max_attempts"),
        ({"mlflow": {"tracking_server_arn": "arn:aws:s3:::bucket"}}, "mlflow.tracking_server_arn"),
        ({"tensorboard": {"local_path": "logs"}}, "tensorboard.local_path"),
        ({"tensorboard": {"s3_uri": "gs://x/y"}}, "tensorboard.s3_uri"),
    ]:
        assert any(line.startswith(field) for line in errors(job(**bad))), (bad, errors(job(**bad)))


def test_the_cli_refuses_a_bad_setting_with_exit_2_naming_the_field(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(
        yaml.safe_dump(job(cluster={"instance_type": "ml.g5.xlarge", "volume_size": 1000}))
    )
    done = run_smdist("validate", str(path), without_aws=True)
    assert done.returncode == 2, done.stderr
    assert "cluster.volume_size" in done.stderr and "Traceback" not in done.stderr


def test_local_mode_refuses_groups_and_file_systems_the_local_backend_emulates(tmp_path):
    path = tmp_path / "job.yaml"
    hetero = heterogeneous_job("t", "bkt").model_dump(mode="json", exclude_defaults=True)
    hetero["inputs"]["lustre"] = {"uri": "fsx://fs-0123456789abcdef0/abcdefgh/x"}
    path.write_text(yaml.safe_dump({**hetero, "network": VPC}))
    done = run_smdist(
        "submit", str(path), "--backend", "sagemaker-local", "--dry-run", "--bucket", "bkt",
        "--role", "arn:aws:iam::123456789012:role/R", "--region", "us-east-1", without_aws=True,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "cluster.instance_groups: SageMaker local mode does not run" in done.stderr
    assert "inputs.lustre.uri: SageMaker local mode reads file:// and s3://" in done.stderr


def test_preferences_that_would_start_different_process_counts_are_refused():
    cluster = {
        "instance_preferences": [
            {"instance_type": "ml.p5.48xlarge", "instance_count": 2},
            {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
        ]
    }
    found = errors(job(cluster=cluster))
    assert any(
        line.startswith("cluster.instance_preferences: the types would start different")
        and "ml.p5.48xlarge: 8, ml.g5.12xlarge: 4" in line
        for line in found
    ), found
    pinned = job(cluster=cluster, strategy={"kind": "pytorch_ddp", "processes_per_host": 4})
    assert not any("different processes" in line for line in errors(pinned))


def test_what_the_local_backend_cannot_reproduce_is_named_in_its_notes():
    from smdist.backends.local.preparation.not_emulated import not_emulated_notes

    spec = JobSpec.from_dict(
        job(cluster={**capacity_cluster("plan"), "instance_type": "ml.c5.xlarge"},
            **tracking_settings("bkt"))
    )  # fmt: skip
    notes = "\n".join(not_emulated_notes(spec))
    for field in ("cluster.volume_size: 500 GB", "training plan", "retry.max_attempts: 3",
                  "infra_check", "remote_debug", "mlflow"):  # fmt: skip
        assert field in notes, field
    assert not_emulated_notes(JobSpec.from_dict(job())) == []
