"""``smdist tune`` against SageMaker, on the moto server, under either SDK line.

For every example (one per strategy) turned into a search, the request ``smdist tune --dry-run``
prints is valid for botocore's model, moto accepts it and describes it back unchanged, and its
training-job definition is submit's CreateTrainingJob for the same plan as the training
toolkit's route (SDK v2's) renders it, field by field, apart from the tuned names and the
values that name the job: each trial is launched as that route launches the job.

That holds under SDK v3 too. The tuning API's algorithm specification has no
``ContainerEntrypoint``, so v3's ``sm_train.sh`` and drivers channel cannot start a trial:
under v3 every trial still starts through the framework image's toolkit, and nothing
v3-specific is uploaded. What a trial shares with v3's own CreateTrainingJob, everything but the
way the container starts (instances, role, image, metrics, limits, network, spot, checkpoints,
environment), is compared in the v3 cases besides.

What moto 5.2.5 does with tuning jobs: it implements Create, Describe, List and Delete. A tuning
job is ``Completed`` as soon as it is created, with fixed counters and a fixed made-up
``BestTrainingJob`` (``FakeTrainingJobName``, objective ``Accuracy`` = 1); it starts no
training job. StopHyperParameterTuningJob and ListTrainingJobsForHyperParameterTuningJob are
not implemented. So ``--wait`` is tested against what moto does (an immediate Completed, its
best job reported as it is), and those two calls are answered in the test by a boto3
``before-call`` handler with responses shaped as the real API's (each checked against
botocore's output shape), next to training jobs and logs that moto really holds.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from moto_server import s3_objects, unreachable_aws

from smdist.backends.sagemaker import tuning
from smdist.backends.sagemaker.tuning import names
from smdist.backends.sagemaker.tuning import request as tuning_request
from smdist.cli.app import main
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .botocore_once import one_botocore_loader  # noqa: F401 - applies to this module
from .conftest import BUCKET, REGION, ROLE
from .tuning_cases import (
    EXAMPLES,
    TUNING_EXAMPLE,
    assert_described_as_sent,
    assert_model_coverage,
    assert_trials_launch_as_submit,
    botocore_problems,
    example,
    rich_job,
    tuning_variant,
    write,
)

ACCOUNT = ["--bucket", BUCKET, "--role", ROLE, "--region", REGION]
FAST = ["--poll", "0.05"]
# What v3's CreateTrainingJob and a trial share, the way the container starts aside.
SHARED_WITH_V3 = (
    "RoleArn",
    "ResourceConfig",
    "StoppingCondition",
    "VpcConfig",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "Environment",
)
V3_ONLY_CHANNELS = ("code", "sm_drivers")  # v3 ships the code and its drivers as channels


def dry_run(path: Path, capsys, verb: str = "tune") -> dict[str, Any]:
    assert main([verb, str(path), "--dry-run", *ACCOUNT]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def toolkit_route_request(path: Path, capsys, monkeypatch) -> dict[str, Any]:
    """submit's dry run of ``path`` as the toolkit's route (SDK v2's) renders it: the way every
    trial starts under either line. Under v2 it is submit's own; under v3 it is rendered with
    v2's route chosen (pure: no SDK call)."""
    import smdist.backends.sagemaker.service as backend

    with monkeypatch.context() as patched:
        patched.setattr(backend, "sdk_v3_installed", lambda: False)
        return dry_run(path, capsys, "submit")


def assert_shares_with_v3(definition: dict[str, Any], v3: dict[str, Any]) -> None:
    for field in SHARED_WITH_V3:
        assert definition.get(field) == v3.get(field), field
    algorithm = definition["AlgorithmSpecification"]
    assert algorithm["TrainingImage"] == v3["AlgorithmSpecification"]["TrainingImage"]
    assert algorithm["MetricDefinitions"] == v3["AlgorithmSpecification"]["MetricDefinitions"]
    assert "ContainerEntrypoint" in v3["AlgorithmSpecification"]  # v3's way, not the trials'
    assert "ContainerEntrypoint" not in algorithm
    user = [c for c in v3.get("InputDataConfig", []) if c["ChannelName"] not in V3_ONLY_CHANNELS]
    trial = [c for c in definition.get("InputDataConfig", []) if c["ChannelName"] != "code"]
    assert trial == user
    output = {k: v for k, v in v3["OutputDataConfig"].items() if k != "CompressionType"}
    assert definition["OutputDataConfig"] == output
    # the trials get the user's values as the toolkit route carries them, plus the toolkit's
    static = definition["StaticHyperParameters"]
    assert "sagemaker_program" in static and "sagemaker_submit_directory" in static


# ---- every example: the request, moto, and submit's request (the toolkit's route) ---------------
def check_example(data: dict[str, Any], sdk_line: str, tmp_path: Path, capsys, monkeypatch,
                  boto_session) -> dict[str, Any]:  # fmt: skip
    shown = dry_run(write(tmp_path, data, "tune.yaml"), capsys)
    request = shown["CreateHyperParameterTuningJob"]
    assert botocore_problems("CreateHyperParameterTuningJob", request) == ""
    client = boto_session.client("sagemaker")
    client.create_hyper_parameter_tuning_job(**request)  # moto accepts it
    described = client.describe_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=request["HyperParameterTuningJobName"]
    )
    assert_described_as_sent(described, request)
    # submit's request for the same job, its two hyperparameters fixed again
    fixed = write(tmp_path, {k: v for k, v in data.items() if k != "tuning"}, "submit.yaml")
    submitted = toolkit_route_request(fixed, capsys, monkeypatch)
    training = submitted["CreateTrainingJob"]
    assert submitted["source_uri"] == shown["source_uri"]  # the same code, shipped once
    assert_trials_launch_as_submit(
        request["TrainingJobDefinition"],
        training,
        request["HyperParameterTuningJobName"],
        training["TrainingJobName"],
    )
    assert len(request["HyperParameterTuningJobName"]) <= 32
    if sdk_line == "v3":  # and as much of v3's own request as a trial can take
        if main(["submit", str(fixed), "--dry-run", *ACCOUNT]) == 0:
            v3 = json.loads(capsys.readouterr().out)["CreateTrainingJob"]
            assert_shares_with_v3(request["TrainingJobDefinition"], v3)
        else:  # v3's container cannot carry it; the trials' toolkit can
            assert "invalid job spec" in capsys.readouterr().err
    return request


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_tunes_as_it_submits(name, sdk_line, tmp_path, capsys, monkeypatch,
                                           boto_session):  # fmt: skip
    data = tuning_variant(example(name))
    request = check_example(data, sdk_line, tmp_path, capsys, monkeypatch, boto_session)
    ranges = request["HyperParameterTuningJobConfig"]["ParameterRanges"]
    (rate,) = ranges["ContinuousParameterRanges"]
    assert rate["Name"] == "learning_rate" and rate["ScalingType"] == "Logarithmic"
    assert float(rate["MinValue"]) < float(rate["MaxValue"])
    (batch,) = ranges["CategoricalParameterRanges"]
    batch_size = example(name)["hyperparameters"]["batch_size"]
    # JSON-encoded, as the fixed values are: the toolkit decodes both the same way
    assert batch["Values"] == [json.dumps(v) for v in (batch_size // 2, batch_size, batch_size * 2)]


@pytest.mark.parametrize("spot", [True, False], ids=["spot", "warm-pool"])
@pytest.mark.parametrize("name", ["pytorch_ddp.yaml", "tf_parameter_server.yaml", "smp_v2.yaml"])
def test_every_setting_reaches_the_trials(name, spot, sdk_line, tmp_path, capsys, monkeypatch,
                                          boto_session):  # fmt: skip
    data = rich_job(tuning_variant(example(name)), spot=spot)
    request = check_example(data, sdk_line, tmp_path, capsys, monkeypatch, boto_session)
    definition = request["TrainingJobDefinition"]
    assert definition["EnableNetworkIsolation"] is True
    assert definition["VpcConfig"]["Subnets"] == ["subnet-0123456789abcdef0"]
    assert [c["ChannelName"] for c in definition["InputDataConfig"]] == ["train", "code"]
    assert ("EnableManagedSpotTraining" in definition) is spot
    assert ("KeepAlivePeriodInSeconds" in definition["ResourceConfig"]) is not spot
    assert request["Tags"] == [{"Key": "team", "Value": "ml"}]
    metrics = [m["Name"] for m in definition["AlgorithmSpecification"]["MetricDefinitions"]]
    assert "val:loss" in metrics and "train:loss" in metrics


def test_the_tuning_example(sdk_line, tmp_path, capsys, monkeypatch, boto_session):
    data = __import__("yaml").safe_load(TUNING_EXAMPLE.read_text())
    request = check_example(data, sdk_line, tmp_path, capsys, monkeypatch, boto_session)
    config = request["HyperParameterTuningJobConfig"]
    assert config["Strategy"] == "Bayesian"
    assert config["TrainingJobEarlyStoppingType"] == "Auto"
    assert config["ResourceLimits"] == {"MaxNumberOfTrainingJobs": 12, "MaxParallelTrainingJobs": 2}
    assert request["TrainingJobDefinition"]["ResourceConfig"]["InstanceCount"] == 2


def test_the_definition_takes_every_field_botocore_gives_both():
    assert_model_coverage()


def test_a_field_with_no_place_fails_loudly():
    training = {"TrainingJobName": "x", "HyperParameters": {}, "SomeNewField": {}}
    training["AlgorithmSpecification"] = {"TrainingInputMode": "File"}
    with pytest.raises(AssertionError, match="SomeNewField"):
        tuning_request.training_job_definition(training, set())


# ---- strategies and options ---------------------------------------------------------------------
def render(tmp_path, capsys, **tuning: Any) -> dict[str, Any]:
    data = tuning_variant(example("pytorch_ddp.yaml"), **tuning)
    request = dry_run(write(tmp_path, data), capsys)["CreateHyperParameterTuningJob"]
    assert botocore_problems("CreateHyperParameterTuningJob", request) == ""
    return request


def test_grid_without_max_jobs_leaves_the_count_to_sagemaker(tmp_path, capsys, boto_session):
    data = tuning_variant(example("pytorch_ddp.yaml"), strategy="Grid")
    data["tuning"].pop("max_jobs")
    data["tuning"]["parameters"]["learning_rate"] = {"type": "categorical", "values": [0.1, 0.01]}
    data["tuning"]["parameters"]["optimizer"] = {"type": "categorical", "values": ["adam", "sgd"]}
    request = dry_run(write(tmp_path, data), capsys)["CreateHyperParameterTuningJob"]
    assert botocore_problems("CreateHyperParameterTuningJob", request) == ""
    config = request["HyperParameterTuningJobConfig"]
    assert config["Strategy"] == "Grid"
    assert config["ResourceLimits"] == {"MaxParallelTrainingJobs": 2}
    values = {
        r["Name"]: r["Values"] for r in config["ParameterRanges"]["CategoricalParameterRanges"]
    }
    assert values["optimizer"] == ['"adam"', '"sgd"']  # as the fixed string values travel
    assert values["learning_rate"] == ["0.1", "0.01"]
    boto_session.client("sagemaker").create_hyper_parameter_tuning_job(**request)


def test_hyperband_random_seed_runtime_and_integer_ranges(tmp_path, capsys):
    request = render(
        tmp_path,
        capsys,
        strategy="Hyperband",
        hyperband={"min_resource": 1, "max_resource": 9},
        random_seed=7,
        max_runtime=7200,
    )
    config = request["HyperParameterTuningJobConfig"]
    assert config["StrategyConfig"] == {
        "HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": 9}
    }
    assert config["RandomSeed"] == 7
    assert config["ResourceLimits"]["MaxRuntimeInSeconds"] == 7200
    assert config["TrainingJobEarlyStoppingType"] == "Off"
    data = tuning_variant(example("pytorch_ddp.yaml"))
    data["hyperparameters"].pop("epochs")
    data["tuning"]["parameters"]["epochs"] = {"type": "integer", "min": 1, "max": 8}
    request = dry_run(write(tmp_path, data), capsys)["CreateHyperParameterTuningJob"]
    (epochs,) = request["HyperParameterTuningJobConfig"]["ParameterRanges"][
        "IntegerParameterRanges"
    ]
    assert epochs == {"Name": "epochs", "MinValue": "1", "MaxValue": "8", "ScalingType": "Auto"}
    assert "epochs" not in request["TrainingJobDefinition"]["StaticHyperParameters"]


def test_warm_start_and_early_stopping(tmp_path, capsys, boto_session):
    request = render(
        tmp_path,
        capsys,
        strategy="Random",
        early_stopping=True,
        warm_start={"parents": ["earlier-search-1", "earlier-search-2"]},
    )
    assert request["WarmStartConfig"] == {
        "ParentHyperParameterTuningJobs": [
            {"HyperParameterTuningJobName": "earlier-search-1"},
            {"HyperParameterTuningJobName": "earlier-search-2"},
        ],
        "WarmStartType": "TransferLearning",
    }
    assert request["HyperParameterTuningJobConfig"]["TrainingJobEarlyStoppingType"] == "Auto"
    client = boto_session.client("sagemaker")
    client.create_hyper_parameter_tuning_job(**request)
    described = client.describe_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=request["HyperParameterTuningJobName"]
    )
    assert_described_as_sent(described, request)


def test_the_name_prefix_is_the_tuning_name_or_the_job_name_cut_with_a_warning(tmp_path, capsys):
    request = render(tmp_path, capsys, name="lr-search")
    assert request["HyperParameterTuningJobName"].startswith("lr-search-")
    data = tuning_variant(example("pytorch_ddp.yaml"))
    data["name"] = "a-rather-long-job-name-for-a-search"
    path = write(tmp_path, data)
    assert main(["tune", str(path), "--dry-run", *ACCOUNT]) == 0
    out, err = capsys.readouterr()
    name = json.loads(out)["CreateHyperParameterTuningJob"]["HyperParameterTuningJobName"]
    assert len(name) <= 32 and name.startswith("a-rather-long-job")
    said = " ".join(err.split())  # the console wraps long lines
    assert "warning: name:" in said and f"named {name[:-14]}-<yymmdd-HHMMSS>" in said


def test_names_in_the_same_second_differ_and_a_taken_name_is_replaced(
    boto_session, bucket, captured_tuning_requests
):
    first, second = names.tuning_job_name("same", 1e9), names.tuning_job_name("same", 1e9)
    assert first != second and len(first) == len(second) == len("same") + 14
    job_plan = plan(JobSpec.from_dict(tuning_variant(example("pytorch_ddp.yaml"))))
    shown = tuning.dry_run(job_plan, bucket=BUCKET, role=ROLE, region=REGION)
    boto_session.client("sagemaker").create_hyper_parameter_tuning_job(**shown.request)
    job = tuning.send(shown, boto_session)  # its name is another job's now
    taken, refused, renamed = captured_tuning_requests
    assert taken == refused == shown.request
    assert job.name == renamed["HyperParameterTuningJobName"] != shown.job_name
    assert renamed == shown.renamed(job.name).request  # rendered again, for the fresh name


# ---- what is refused before any AWS call --------------------------------------------------------
def test_a_job_without_tuning_exits_2_naming_the_field(tmp_path, capsys, monkeypatch):
    unreachable_aws(monkeypatch, tmp_path)
    path = write(tmp_path, example("pytorch_ddp.yaml"))
    assert main(["tune", str(path), *ACCOUNT]) == 2
    err = capsys.readouterr().err
    assert "tuning: is missing" in err


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"strategy": "Grid"}, "tuning.parameters.learning_rate.type"),
        ({"objective": {"metric": "val:acc"}}, "tuning.objective.metric"),
        ({"max_parallel_jobs": 9}, "tuning.max_parallel_jobs"),
        ({"max_jobs": None}, "tuning.max_jobs"),
        ({"name": "x" * 30}, "tuning.name"),
        ({"strategy": "Hyperband", "early_stopping": True}, "tuning.early_stopping"),
        ({"warm_start": {"parents": ["bad_name!"]}}, "tuning.warm_start.parents"),
        ({"early_stopping": "maybe"}, "tuning.early_stopping"),
    ],
)
def test_a_bad_tuning_section_exits_2_naming_the_field(
    change, field, tmp_path, capsys, monkeypatch
):
    unreachable_aws(monkeypatch, tmp_path)
    data = tuning_variant(example("pytorch_ddp.yaml"))
    data["tuning"].update(change)
    for verb in (["--dry-run"], []):
        assert main(["tune", str(write(tmp_path, data)), *ACCOUNT, *verb]) == 2
        assert field in capsys.readouterr().err


def test_a_tuned_name_also_fixed_exits_2(tmp_path, capsys, monkeypatch):
    unreachable_aws(monkeypatch, tmp_path)
    data = tuning_variant(example("pytorch_ddp.yaml"))
    data["hyperparameters"]["batch_size"] = 64
    assert main(["tune", str(write(tmp_path, data)), *ACCOUNT]) == 2
    assert "tuning.parameters.batch_size" in capsys.readouterr().err


# ---- launch, --wait, status, logs, stop ---------------------------------------------------------
def launch(tmp_path, capsys, *args: str, job: str = "pytorch_ddp.yaml") -> tuple[int, str, str]:
    path = write(tmp_path, tuning_variant(example(job)))
    code = main(["tune", str(path), *ACCOUNT, *FAST, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_tune_uploads_the_code_only_and_creates_what_the_dry_run_shows(
    aws, boto_session, bucket, tmp_path, capsys
):
    shown = dry_run(write(tmp_path, tuning_variant(example("pytorch_ddp.yaml"))), capsys)
    code, out, err = launch(tmp_path, capsys)
    assert code == 0, err
    name = out.strip()
    described = boto_session.client("sagemaker").describe_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name
    )
    expected = shown["CreateHyperParameterTuningJob"]
    static = expected["TrainingJobDefinition"]["StaticHyperParameters"]
    static["sagemaker_job_name"] = json.dumps(name)  # the only value that differs: the name
    assert_described_as_sent(described, dict(expected, HyperParameterTuningJobName=name))
    # The code is there, and nothing else: no sm_drivers under v3 (the toolkit starts trials),
    # and v2's SDK uploads nothing itself.
    assert list(s3_objects(boto_session)) == [shown["source_uri"]]
    assert "code: uploaded" in err


def test_wait_reports_what_moto_reports(aws, boto_session, bucket, tmp_path, capsys):
    # moto completes a tuning job at once, with a made-up best job that has no training job
    code, out, err = launch(tmp_path, capsys, "--wait")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1:] == [
        "best: FakeTrainingJobName",
        "objective: train:loss = 1.0",
        'hyperparameters: {"string": "TunedHyperParameters"}',
        "model: none yet",
    ]
    assert "Completed; 1 completed, 0 in progress, 0 failed, 0 stopped" in err


# Calls moto leaves out, answered as the real API answers them.
def emulate(monkeypatch, answers: dict[str, Any], calls: list[tuple[str, dict]]) -> None:
    """Every boto3 session smdist makes answers ``answers`` (operation -> response, or a
    function of the parameters) itself; each response is checked against botocore's output
    shape first. Other calls go to moto."""
    from botocore.awsrequest import AWSResponse
    from botocore.validate import ParamValidator

    from smdist.backends.sagemaker import sdk

    def answer(model, params, **_):  # noqa: ANN001 - botocore's event signature
        if model.name not in answers:
            return None
        calls.append((model.name, json.loads(params["body"])))  # the request as sent
        response = answers[model.name]
        response = response(params) if callable(response) else response
        if model.output_shape is None:  # a call that returns nothing
            assert response == {}
        else:
            report = ParamValidator().validate(response, model.output_shape)
            assert not report.has_errors(), report.generate_report()
        return AWSResponse("https://sagemaker", 200, {}, None), response

    original = sdk.boto_session

    def session(region=None, boto=None):  # noqa: ANN001, ANN202
        made = original(region, boto)
        made.events.register("before-call.sagemaker", answer)
        return made

    monkeypatch.setattr(sdk, "boto_session", session)


def summary(name: str, tuning: str, values: dict, loss: float | None, status: str) -> dict:
    result: dict[str, Any] = {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:{REGION}:123456789012:training-job/{name}",
        "TuningJobName": tuning,
        "CreationTime": datetime(2026, 11, 1, tzinfo=timezone.utc),
        "TrainingJobStatus": status,
        "TunedHyperParameters": values,
    }
    if loss is not None:
        result["FinalHyperParameterTuningJobObjectiveMetric"] = {
            "Type": "Minimize",
            "MetricName": "train:loss",
            "Value": loss,
        }
    return result


def make_trials(boto_session, name: str, definition: dict) -> list[dict]:
    """Three trials as training jobs moto holds, with SageMaker's names and summaries."""
    client = boto_session.client("sagemaker")
    trials = [
        ("001-6f2e1c9a", {"learning_rate": "0.003", "batch_size": "32"}, 0.9, "Completed"),
        ("002-0b1d2e3f", {"learning_rate": "0.02", "batch_size": "128"}, 0.4, "Completed"),
        ("003-aa11bb22", {"learning_rate": "0.09", "batch_size": "64"}, None, "Failed"),
    ]
    summaries = []
    for suffix, values, loss, status in trials:
        trial = f"{name}-{suffix}"
        client.create_training_job(
            TrainingJobName=trial,
            HyperParameters={**definition["StaticHyperParameters"], **values},
            AlgorithmSpecification=definition["AlgorithmSpecification"],
            RoleArn=definition["RoleArn"],
            OutputDataConfig=definition["OutputDataConfig"],
            ResourceConfig=definition["ResourceConfig"],
            StoppingCondition=definition["StoppingCondition"],
        )
        summaries.append(summary(trial, name, values, loss, status))
    return summaries


def test_result_best_and_dataframe_from_the_trials(
    aws, boto_session, bucket, tmp_path, capsys, monkeypatch
):
    code, out, _ = launch(tmp_path, capsys)
    name = out.strip()
    client = boto_session.client("sagemaker")
    definition = client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
        "TrainingJobDefinition"
    ]
    summaries = make_trials(boto_session, name, definition)
    calls: list[tuple[str, dict]] = []
    emulate(
        monkeypatch,
        {"ListTrainingJobsForHyperParameterTuningJob": {"TrainingJobSummaries": summaries}},
        calls,
    )
    from smdist.backends.sagemaker import tuning

    job = tuning.attach(name, REGION, poll_seconds=0.05)
    result = job.result()
    assert result.backend == "sagemaker" and result.status == "Completed"
    assert (result.objective_metric, result.objective_type) == ("train:loss", "Minimize")
    assert [t.number for t in result.trials] == [0, 1, 2]
    assert result.trials[0].values == {"learning_rate": 0.003, "batch_size": 32}
    assert [t.status for t in result.trials] == ["Completed", "Completed", "Failed"]
    best = result.best
    assert best is not None and best.name == f"{name}-002-0b1d2e3f" and best.objective == 0.4
    model = client.describe_training_job(TrainingJobName=best.name)["ModelArtifacts"]
    assert best.model == model["S3ModelArtifacts"]
    assert result.trials[2].model is None  # failed: no model
    assert calls[0][1] == {"HyperParameterTuningJobName": name, "MaxResults": 100}
    frame = job.dataframe()
    assert list(frame["objective"])[:2] == [0.9, 0.4]
    assert list(frame["batch_size"]) == [32, 128, 64]


@pytest.mark.parametrize("job", ["pytorch_ddp.yaml", "mwms.yaml"])  # PyTorch's, TensorFlow's
def test_status_on_a_tuning_job_name(job, aws, boto_session, bucket, tmp_path, capsys):
    code, out, err = launch(tmp_path, capsys, job=job)
    assert code == 0, err
    name = out.strip()
    assert main(["status", name]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{name}\tCompleted\ttuning job: 1 completed")
    assert "best: FakeTrainingJobName" in text
    assert main(["status", name, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["HyperParameterTuningJobName"] == name


def test_stop_on_a_tuning_job_name(aws, boto_session, bucket, tmp_path, capsys, monkeypatch):
    code, out, _ = launch(tmp_path, capsys)
    name = out.strip()
    calls: list[tuple[str, dict]] = []
    emulate(monkeypatch, {"StopHyperParameterTuningJob": {}}, calls)
    assert main(["stop", name]) == 0
    assert calls == [("StopHyperParameterTuningJob", {"HyperParameterTuningJobName": name})]
    assert f"{name}: stop requested" in capsys.readouterr().err


def test_logs_of_a_tuning_job_trial(aws, boto_session, bucket, tmp_path, capsys):
    import time

    code, out, _ = launch(tmp_path, capsys)
    name = out.strip()
    client = boto_session.client("sagemaker")
    definition = client.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
        "TrainingJobDefinition"
    ]
    trial = make_trials(boto_session, name, definition)[1]["TrainingJobName"]
    logs = boto_session.client("logs")
    group = "/aws/sagemaker/TrainingJobs"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName=f"{trial}/algo-1-1700000000")
    logs.put_log_events(
        logGroupName=group,
        logStreamName=f"{trial}/algo-1-1700000000",
        logEvents=[{"timestamp": int(time.time() * 1000), "message": "[metrics] loss=0.4"}],
    )
    assert main(["logs", name, "--job", trial]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["algo-1 | [metrics] loss=0.4"]
    assert f"logs of training job {trial}" in captured.err
    # the best job by default: moto's made-up one has no logs
    assert main(["logs", name]) == 0
    assert "logs of training job FakeTrainingJobName" in capsys.readouterr().err


def test_job_option_applies_to_tuning_jobs_only(aws, boto_session, bucket, tmp_path, capsys):
    path = write(tmp_path, example("pytorch_ddp.yaml"))
    assert main(["submit", str(path), *ACCOUNT]) == 0, capsys.readouterr().err
    assert main(["logs", capsys.readouterr().out.split()[0], "--job", "x"]) == 2
    assert "--job" in capsys.readouterr().err


def test_a_name_that_is_neither_exits_2(aws, capsys):
    assert main(["status", "never-tuned"]) == 2
    assert "no SageMaker training job or tuning job" in capsys.readouterr().err


def test_local_hands_the_plan_to_the_local_search(tmp_path, capsys, monkeypatch):
    import sys
    import types

    unreachable_aws(monkeypatch, tmp_path)
    seen: dict[str, Any] = {}

    def run(plan, backend, options, **shown):  # noqa: ANN001, ANN202 - for tuning_local.run
        seen.update(options.given(), plan=plan, backend=backend.name)
        return 1

    module = types.ModuleType("smdist.cli.tuning_local")
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "smdist.cli.tuning_local", module)
    path = write(tmp_path, tuning_variant(example("pytorch_ddp.yaml")))
    args = ["--local", "--parallel", "2", "--hosts", "1", "--fresh", "--root", str(tmp_path)]
    assert main(["tune", str(path), *args]) == 1  # its exit code is the command's
    assert seen["plan"].spec.tuning.max_jobs == 4
    assert (seen["parallel"], seen["hosts"], seen["fresh"], seen["root"]) == (2, 1, True, tmp_path)
    assert seen["backend"] == "local"
