"""The dry run is what SDK v3 sends: for every strategy, launcher and SMP version on two
clusters, and for the settings large jobs reach for (retries, checks, remote debugging,
TensorBoard, MLflow, file system channels, volume size, instance groups, training plans,
instance preferences, UltraServer placement), the CreateTrainingJob that v3's
``ModelTrainer.train()`` sends (captured from boto3 on its way to the moto server) equals the
request ``smdist submit --dry-run`` shows, and the job smdist's ``sagemaker`` backend submits
sends exactly that request. The ``sm_drivers`` channel smdist uploads holds the same files,
byte for byte, as the one ``train()`` uploads.

The ModelTrainer compared is smdist's (``v3.model_trainer``), configured as smdist configures
it. Where that differs from a ModelTrainer a user would write with the same settings, the
difference is deliberate and named in ``DELIBERATE_DIFFERENCES``, each with its own test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conformance_cases import (
    CASES,
    MLFLOW_SERVER,
    SMDDP,
    STRATEGIES,
    TRAINING_PLAN,
    capacity_cluster,
    conformance_job,
    every_option_settings,
    file_system_settings,
    heterogeneous_job,
    tracking_settings,
)

from smdist.backends import sagemaker as backend
from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.packaging import bundle as packaging
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE
from .sdk_once import one_botocore_loader, sdk_config_schema_checked_once  # noqa: F401

COMPARED = (
    "AlgorithmSpecification",
    "HyperParameters",
    "Environment",
    "InputDataConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "StoppingCondition",
    "CheckpointConfig",
    "VpcConfig",
    "EnableManagedSpotTraining",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "Tags",
    "RoleArn",
    "ProfilerConfig",
    "RetryStrategy",
    "InfraCheckConfig",
    "RemoteDebugConfig",
    "TensorBoardOutputConfig",
    "MlflowConfig",
)


# What smdist's request does differently from a plain ModelTrainer given the job's settings.
DELIBERATE_DIFFERENCES = {
    "HyperParameters": (
        "each value is encoded so that v3's drivers give the script what SDK v2's toolkit gives "
        "it (v3_hyperparameters), not sent raw: v3's drivers would decode '1.10' into 1.1"
    ),
    "sm_drivers/sm_train.sh": (
        "installs the code's requirements.txt, as SDK v2's toolkit does, when there is one: "
        "smdist sets SourceCode.requirements, which a plain ModelTrainer leaves unset"
    ),
    "ProfilerConfig": (
        "{DisableProfiler: true}, as the SDK v2 path sends it (disable_profiler=True): no "
        "profiler output in S3; ModelTrainer has no setting for it, so smdist's adds it"
    ),
    "AlgorithmSpecification.EnableSageMakerMetricsTimeSeries": (
        "true, as the SDK v2 path sends it (enable_sagemaker_metrics=True): metric time series "
        "for the [metrics] lines; ModelTrainer has no setting for it, so smdist's adds it"
    ),
    "MlflowConfig": (
        "the job's mlflow: section (tracking server, experiment, run name), as smdist's request "
        "sends it; ModelTrainer 3.27 has no setting for it (TrainingJob.create takes one), so "
        "smdist's adds it (with_mlflow_config)"
    ),
}


def conformance_spec(name: str, strategy: dict, code: dict, cluster: tuple[str, int], **more: Any):
    return conformance_job("v3c", BUCKET, name, strategy, code, cluster, **more)


def s3_tree(s3, uri: str) -> dict[str, bytes]:
    """Every object under ``uri`` (bytecode aside), by its path below it."""
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) + 1 :]
            if "__pycache__" in relative:
                continue  # v3 uploads the installed package's bytecode too
            found[relative] = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
    return found


def channel(request: dict, name: str) -> dict:
    (found,) = [c for c in request["InputDataConfig"] if c["ChannelName"] == name]
    return found


def drivers(request: dict) -> str:
    return channel(request, "sm_drivers")["DataSource"]["S3DataSource"]["S3Uri"]


def code_of(request: dict) -> str:
    return channel(request, "code")["DataSource"]["S3DataSource"]["S3Uri"]


def with_cluster(spec: JobSpec, cluster: dict) -> JobSpec:
    """``spec`` with the job file's ``cluster:`` section ``cluster``."""
    return JobSpec.from_dict({**spec.model_dump(exclude_unset=True), "cluster": cluster})


def without_drivers_uri(request: dict) -> dict:
    """The request with the sm_drivers channel's S3Uri blanked: v3 puts it under the job's
    name, smdist under its content digest (compared by content instead)."""
    copied = json.loads(json.dumps(request))
    for channel in copied.get("InputDataConfig", []):
        if channel["ChannelName"] == "sm_drivers":
            channel["DataSource"]["S3DataSource"]["S3Uri"] = "<drivers>"
    return copied


def compare(spec: JobSpec, boto_session, captured: list[dict]) -> tuple[dict, dict]:
    """v3's request and smdist's, after checking that they agree; returns (v3's, smdist's)."""
    job_plan = plan(spec)
    job = backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    ours = captured[-1]
    shown = backend.dry_run(job_plan, bucket=BUCKET, role=ROLE, region=REGION, job_name=job.name)
    assert ours == shown.request  # what smdist sends is what its dry run shows
    trainer = v3.model_trainer(
        job_plan,
        role=ROLE,
        bucket=BUCKET,
        region=REGION,
        session=boto_session,
        code_s3_uri=job.source_uri,
    )
    trainer.train(wait=False, logs=False)
    theirs = captured[-1]
    assert theirs is not ours
    mine, sdk = without_drivers_uri(shown.request), without_drivers_uri(theirs)
    for key in COMPARED:
        assert mine.get(key) == sdk.get(key), key
    assert set(mine) - {"TrainingJobName"} == set(sdk) - {"TrainingJobName"}
    s3 = boto_session.client("s3")
    assert s3_tree(s3, drivers(ours)) == s3_tree(s3, drivers(theirs))
    return theirs, ours


@pytest.mark.parametrize(("name", "strategy", "code", "cluster"), CASES)
def test_v3_request_equals_dry_run(name, strategy, code, cluster, boto_session, bucket,
                                   captured_requests):  # fmt: skip
    theirs, ours = compare(conformance_spec(name, strategy, code, cluster), boto_session,
                           captured_requests)  # fmt: skip
    assert ours["ResourceConfig"]["InstanceCount"] == cluster[1]
    assert not [k for k in ours["HyperParameters"] if k.startswith("sagemaker_")]
    assert ours["HyperParameters"]["note"] == '"two words"'  # v2's encoding: see below


def test_every_job_option_reaches_both_requests(boto_session, bucket, captured_requests):
    spec = conformance_spec(
        "options", {"kind": "sddp"}, SMDDP, ("ml.p4d.24xlarge", 2), **every_option_settings(BUCKET)
    )
    _, ours = compare(spec, boto_session, captured_requests)
    assert ours["EnableManagedSpotTraining"] is True
    assert ours["EnableNetworkIsolation"] is True
    assert ours["VpcConfig"]["Subnets"] == ["subnet-0123456789abcdef0"]


def test_resubmit_uploads_nothing_and_names_jobs_apart(boto_session, bucket, captured_requests):
    job_plan = plan(conformance_spec("again", *STRATEGIES["mwms"][:2], ("ml.g5.xlarge", 2)))
    first = backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    names = {first.name}
    for _ in range(3):
        again = backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
        assert again.uploaded_bytes == 0
        names.add(again.name)
    assert first.uploaded_bytes > 0
    assert len(names) == 4  # four submits within a second, four names


def test_cli_dry_run_prints_the_v3_request_and_calls_no_aws(tmp_path, aws):
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: cli-v3\nstrategy: {kind: mwms}\n"
        "cluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n"
        "code: {framework_version: '2.14', py_version: py310}\n"
        f"role: {ROLE}\nregion: {REGION}\n"
    )
    # No endpoint and no credentials at all: a dry run must not need them.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SMDIST_BUCKET": BUCKET,
           "SAGEMAKER_USER_CONFIG_OVERRIDE": "", "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    env.pop("SAGEMAKER_USER_CONFIG_OVERRIDE")
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "submit", str(job), "--dry-run"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["estimator"].startswith("ModelTrainer")
    request = shown["CreateTrainingJob"]
    assert request["AlgorithmSpecification"]["ContainerEntrypoint"] == ["/bin/bash"]
    assert [c["ChannelName"] for c in request["InputDataConfig"]] == ["code", "sm_drivers"]
    assert drivers(request).startswith(f"s3://{BUCKET}/smdist/drivers/")
    code = request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    assert code.endswith(f"/{packaging.TARBALL_NAME}")


def plain_trainer(job_plan, code_uri: str, boto_session, **changes):
    """v3's ModelTrainer for the plan as smdist configures it, with ``changes`` to its fields:
    what a user writing the same settings by hand would get."""
    trainer = v3.model_trainer(
        job_plan, role=ROLE, bucket=BUCKET, region=REGION, session=boto_session,
        code_s3_uri=code_uri,
    )  # fmt: skip
    for name, value in changes.items():
        setattr(trainer, name, value)
    return trainer


def test_hyperparameters_differ_from_a_plain_model_trainer_only_in_their_encoding(
    boto_session, bucket, captured_requests
):
    """DELIBERATE_DIFFERENCES["HyperParameters"]."""
    from sagemaker.train.container_drivers.common.utils import safe_serialize

    from smdist.backends.sagemaker.v3.hyperparameters import for_v3_drivers

    values = {"epochs": 2, "version": "1.10", "flag": True, "scale": "1e3", "note": "two words"}
    strategy, code, _ = STRATEGIES["ddp-static"]
    spec = conformance_spec("hp-encoding", strategy, code, ("ml.g5.xlarge", 2))
    job_plan = plan(spec.model_copy(update={"hyperparameters": values}))
    job = backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    ours = captured_requests[-1]
    plain = plain_trainer(job_plan, job.source_uri, boto_session, hyperparameters=dict(values))
    plain.train(wait=False, logs=False)
    theirs = captured_requests[-1]
    assert ours["HyperParameters"] == {name: for_v3_drivers(v) for name, v in values.items()}
    assert theirs["HyperParameters"] == {name: safe_serialize(v) for name, v in values.items()}
    assert ours["HyperParameters"]["version"] != theirs["HyperParameters"]["version"]
    mine, sdk = without_drivers_uri(ours), without_drivers_uri(theirs)
    for key in COMPARED:
        if key != "HyperParameters":
            assert mine.get(key) == sdk.get(key), key


def test_every_job_has_the_profiler_off_and_metric_time_series_on_unlike_a_plain_trainer(
    boto_session, bucket, captured_requests
):
    """DELIBERATE_DIFFERENCES["ProfilerConfig"] and ["AlgorithmSpecification.
    EnableSageMakerMetricsTimeSeries"]: what the README says smdist sets on every job is in the
    request moto receives from ``smdist submit`` and from smdist's ModelTrainer's ``train()``;
    v3's own ModelTrainer, given the same settings, sends neither."""
    strategy, code, _ = STRATEGIES["ddp-static"]
    spec = conformance_spec("every-job", strategy, code, ("ml.g5.xlarge", 2))
    theirs, ours = compare(spec, boto_session, captured_requests)
    for request in (ours, theirs):
        assert request["ProfilerConfig"] == {"DisableProfiler": True}
        algorithm = request["AlgorithmSpecification"]
        assert algorithm["EnableSageMakerMetricsTimeSeries"] is True
        assert {"train:loss", "train:step"} <= {d["Name"] for d in algorithm["MetricDefinitions"]}
        assert "DebugHookConfig" not in request  # as SDK v2 with debugger_hook_config=False
    described = boto_session.client("sagemaker").describe_training_job(
        TrainingJobName=ours["TrainingJobName"]
    )
    assert described["AlgorithmSpecification"]["EnableSageMakerMetricsTimeSeries"] is True
    # The boto3-shaped request v3 hands to pipelines and AWS Batch queues carries them too.
    smdists = plain_trainer(plan(spec), code_of(ours), boto_session)
    queued = smdists._create_training_job_args(boto3=True)
    assert queued["ProfilerConfig"] == {"DisableProfiler": True}
    assert queued["AlgorithmSpecification"]["EnableSageMakerMetricsTimeSeries"] is True

    v3s_own_trainer(smdists).train(wait=False, logs=False)
    sdk = captured_requests[-1]
    assert "ProfilerConfig" not in sdk
    assert "EnableSageMakerMetricsTimeSeries" not in sdk["AlgorithmSpecification"]
    assert_differs_only_in_every_job_settings(sdk, theirs)


def v3s_own_trainer(smdists) -> Any:
    """v3's own ModelTrainer with every setting of smdist's ``smdists``: its fields, metric
    definitions and ``with_*`` configs, as a user would write it by hand."""
    from sagemaker.train import ModelTrainer

    assert isinstance(smdists, ModelTrainer)
    settings = {name: getattr(smdists, name) for name in smdists.model_fields_set}
    plain = ModelTrainer(**settings).with_metric_definitions(smdists._metric_definitions)
    for config, method in (
        (smdists._retry_strategy, plain.with_retry_strategy),
        (smdists._infra_check_config, plain.with_infra_check_config),
        (smdists._remote_debug_config, plain.with_remote_debug_config),
        (smdists._tensorboard_output_config, plain.with_tensorboard_output_config),
    ):
        if config is not None:
            method(config)
    return plain


def assert_differs_only_in_every_job_settings(sdk: dict, smdists: dict, *more: str) -> None:
    """v3's own request ``sdk`` equals smdist's ModelTrainer's ``smdists`` but for what smdist
    sets on every job (the profiler, metric time series) and the fields ``more``."""
    mine, plain = without_drivers_uri(smdists), without_drivers_uri(sdk)
    for key in COMPARED:
        if key in ("ProfilerConfig", *more):
            continue
        expected = mine.get(key)
        if key == "AlgorithmSpecification":
            expected = {k: v for k, v in expected.items()
                        if k != "EnableSageMakerMetricsTimeSeries"}  # fmt: skip
        assert plain.get(key) == expected, key


def test_requirements_txt_is_installed_as_model_trainer_installs_a_named_requirements_file(
    boto_session, bucket, captured_requests, tmp_path
):
    """DELIBERATE_DIFFERENCES["sm_drivers/sm_train.sh"]: smdist's request and its drivers are
    what ModelTrainer sends with SourceCode(requirements="requirements.txt")."""
    from sagemaker.core.training.configs import SourceCode

    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text("print('trained')\n")
    (source / "requirements.txt").write_text("tiny-package==1.0\n")
    strategy, code, _ = STRATEGIES["ddp-static"]
    code = {"entry_point": "train.py", "source_dir": str(source), **code}
    theirs, ours = compare(
        conformance_spec("requirements", strategy, code, ("ml.g5.xlarge", 2)), boto_session,
        captured_requests,
    )  # fmt: skip
    s3 = boto_session.client("s3")
    channel = s3_tree(s3, drivers(ours))
    assert b"install_requirements.py requirements.txt" in channel["sm_train.sh"]
    assert json.loads(channel["sourcecode.json"])["requirements"] == "requirements.txt"
    # A ModelTrainer given the same code without naming the file installs nothing.
    code_uri = code_of(ours)
    job_plan = plan(conformance_spec("requirements", strategy, code, ("ml.g5.xlarge", 2)))
    unnamed = SourceCode(source_dir=code_uri, entry_script="train.py", ignore_patterns=[])
    plain_trainer(job_plan, code_uri, boto_session, source_code=unnamed).train(
        wait=False, logs=False
    )
    plain = s3_tree(s3, drivers(captured_requests[-1]))
    assert b"install_requirements" not in plain["sm_train.sh"]
    assert {name for name in channel if channel[name] != plain.get(name)} == {
        "sm_train.sh",
        "sourcecode.json",
    }


def test_a_requirements_txt_left_out_of_the_code_is_not_installed(
    boto_session, bucket, captured_requests, tmp_path
):
    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text("print('trained')\n")
    (source / "requirements.txt").write_text("tiny-package==1.0\n")
    (source / ".smdistignore").write_text("requirements.txt\n")
    strategy, code, _ = STRATEGIES["mwms"]
    code = {"entry_point": "train.py", "source_dir": str(source), **code}
    _, ours = compare(
        conformance_spec("no-requirements", strategy, code, ("ml.g5.xlarge", 2)), boto_session,
        captured_requests,
    )  # fmt: skip
    channel = s3_tree(boto_session.client("s3"), drivers(ours))
    assert b"install_requirements" not in channel["sm_train.sh"]
    assert json.loads(channel["sourcecode.json"])["requirements"] is None


# ---- the settings large jobs reach for --------------------------------------------------------
def test_tracking_file_systems_and_volume_size_reach_both_requests(
    boto_session, bucket, captured_requests
):
    strategy, code, _ = STRATEGIES["ddp-static"]
    settings = {**tracking_settings(BUCKET), **file_system_settings(BUCKET)}
    spec = conformance_spec("tracking", strategy, code, ("ml.p3.2xlarge", 2), **settings)
    spec = with_cluster(spec, {"instance_type": "ml.p3.2xlarge", "instance_count": 2,
                               "volume_size": 300})  # fmt: skip
    _, ours = compare(spec, boto_session, captured_requests)
    assert ours["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert ours["InfraCheckConfig"] == {"EnableInfraCheck": True}
    assert ours["RemoteDebugConfig"] == {"EnableRemoteDebug": True}
    assert ours["TensorBoardOutputConfig"] == {
        "S3OutputPath": f"s3://{BUCKET}/tensorboard",
        "LocalPath": "/opt/ml/output/tensorboard",
    }
    assert ours["MlflowConfig"]["MlflowResourceArn"] == MLFLOW_SERVER
    assert ours["ResourceConfig"] == {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 2,
                                      "VolumeSizeInGB": 300}  # fmt: skip
    assert channel(ours, "lustre")["DataSource"] == {
        "FileSystemDataSource": {
            "FileSystemId": "fs-0123456789abcdef0",
            "FileSystemAccessMode": "ro",
            "FileSystemType": "FSxLustre",
            "DirectoryPath": "/abcdefgh/imagenet",
        }
    }
    shared = channel(ours, "shared")["DataSource"]["FileSystemDataSource"]
    assert (shared["FileSystemType"], shared["FileSystemAccessMode"]) == ("EFS", "rw")
    assert shared["DirectoryPath"] == "/datasets"
    assert [c["ChannelName"] for c in ours["InputDataConfig"]] == [
        "train", "lustre", "shared", "code", "sm_drivers"
    ]  # fmt: skip


def test_mlflow_reaches_the_request_unlike_a_plain_model_trainer(
    boto_session, bucket, captured_requests
):
    """DELIBERATE_DIFFERENCES["MlflowConfig"]: the job's MLflow settings are in the request
    from ``smdist submit`` and from smdist's ModelTrainer, in either form; v3's own
    ModelTrainer with every other setting the same sends none."""
    strategy, code, _ = STRATEGIES["ddp-static"]
    spec = conformance_spec(
        "mlflow", strategy, code, ("ml.g5.xlarge", 2), **tracking_settings(BUCKET)
    )
    theirs, ours = compare(spec, boto_session, captured_requests)
    expected = {"MlflowResourceArn": MLFLOW_SERVER, "MlflowExperimentName": "resnet",
                "MlflowRunName": "r1"}  # fmt: skip
    assert ours["MlflowConfig"] == theirs["MlflowConfig"] == expected
    smdists = plain_trainer(plan(spec), code_of(ours), boto_session)
    assert smdists._create_training_job_args(boto3=True)["MlflowConfig"] == expected

    v3s_own_trainer(smdists).train(wait=False, logs=False)
    sdk = captured_requests[-1]
    assert "MlflowConfig" not in sdk
    assert sdk["RetryStrategy"] == ours["RetryStrategy"]  # the settings v3 takes, it sends
    assert_differs_only_in_every_job_settings(sdk, theirs, "MlflowConfig")


def test_heterogeneous_job_reaches_both_requests_and_runs_smdists_driver(
    boto_session, bucket, captured_requests
):
    _, ours = compare(heterogeneous_job("v3c", BUCKET), boto_session, captured_requests)
    assert ours["ResourceConfig"] == {
        "InstanceGroups": [
            {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1, "InstanceGroupName": "data"},
            {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2, "InstanceGroupName": "gpu"},
        ],
        "VolumeSizeInGB": 200,
    }
    # SageMaker takes channels on groups for all or none: code and drivers go to every group.
    groups = {c["ChannelName"]: c["DataSource"]["S3DataSource"]["InstanceGroupNames"]
              for c in ours["InputDataConfig"]}  # fmt: skip
    assert groups == {"raw": ["data"], "train": ["gpu"], "code": ["data", "gpu"],
                      "sm_drivers": ["data", "gpu"]}  # fmt: skip
    # v3's Torchrun driver would start torchrun on all three hosts: smdist's driver runs, and
    # tells the contract which groups run the distributed program.
    files = s3_tree(boto_session.client("s3"), drivers(ours))
    assert b"smdist_driver.py" in files["sm_train.sh"]
    settings = json.loads(files["distributed.json"])
    toolkit = settings["toolkit_hyperparameters"]
    assert json.loads(toolkit["sagemaker_distribution_instance_groups"]) == ["gpu"]
    assert settings["launcher"] == "program"  # smdist's torchrun launcher, on the gpu hosts
    assert (settings["launch"]["instance_type"], len(settings["launch"]["hosts"])) == (
        "ml.g5.xlarge", 2
    )  # fmt: skip


SHARED_ULTRASERVERS = {
    "instance_type": "ml.p6e-gb200.36xlarge",
    "instance_count": 4,
    "placement": {
        "ultraservers": [
            {"instance_count": 2, "ultra_server_id": "us-0123"},
            {"instance_count": 2},
        ],
        "multiple_jobs": True,
    },
}
CAPACITY = {
    "plan": (capacity_cluster("plan"), {
        "InstanceType": "ml.p5.48xlarge", "InstanceCount": 2, "VolumeSizeInGB": 500,
        "TrainingPlanArn": TRAINING_PLAN,
    }),
    "preferences": (capacity_cluster("preferences"), {
        "InstancePreferences": [
            {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2,
             "TrainingPlanArns": [TRAINING_PLAN]},
            {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
        ],
        "VolumeSizeInGB": 30,
    }),
    # EnableMultipleJobs false is the API's default: v3's serializer leaves it out.
    "ultraserver": (capacity_cluster("ultraserver"), {
        "InstanceType": "ml.p6e-gb200.36xlarge", "InstanceCount": 4, "VolumeSizeInGB": 30,
        "TrainingPlanArn": TRAINING_PLAN,
        "InstancePlacementConfig": {"PlacementSpecifications": [{"InstanceCount": 4}]},
    }),
    "shared-ultraservers": (SHARED_ULTRASERVERS, {
        "InstanceType": "ml.p6e-gb200.36xlarge", "InstanceCount": 4, "VolumeSizeInGB": 30,
        "InstancePlacementConfig": {
            "EnableMultipleJobs": True,
            "PlacementSpecifications": [
                {"UltraServerId": "us-0123", "InstanceCount": 2}, {"InstanceCount": 2},
            ],
        },
    }),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(CAPACITY))
def test_capacity_clusters_reach_both_requests(kind, boto_session, bucket, captured_requests):
    cluster, resources = CAPACITY[kind]
    strategy, code, _ = STRATEGIES["ddp-static"]
    spec = conformance_spec(f"capacity-{kind}", strategy, code, ("ml.p5.48xlarge", 2))
    _, ours = compare(with_cluster(spec, cluster), boto_session, captured_requests)
    assert ours["ResourceConfig"] == resources


def test_cli_dry_run_refuses_what_v3_cannot_carry_with_exit_2(tmp_path, aws):
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: cli-v3-refused\nstrategy: {kind: pytorch_ddp}\n"
        "cluster:\n  instance_preferences:\n"
        "    - {instance_type: ml.p5.48xlarge, instance_count: 2}\n"
        "    - {instance_type: ml.p4d.24xlarge, instance_count: 2}\n"
        "spot: {enabled: true}\n"
        "code: {framework_version: '2.3.0', py_version: py311}\n"
        f"role: {ROLE}\nregion: {REGION}\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SMDIST_BUCKET": BUCKET,
           "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "submit", str(job), "--dry-run"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "spot.enabled" in done.stderr and "instance_preferences" in done.stderr
    assert done.stdout == ""
