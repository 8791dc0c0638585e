"""The ``tuning:`` section and ``metric_definitions``: what is accepted, and every refusal naming
its field, with exit 2 from the command line before anything runs."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import smdist
from smdist.checks.reading import as_job_spec
from smdist.checks.tuning import metric_definitions, tuning_name_prefix
from smdist.errors import SpecError

EXAMPLE = Path("examples/tuning/pytorch_ddp.yaml")
BASE: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())


def job(**changes: Any) -> dict[str, Any]:
    """The example with ``tuning`` keys replaced (``None`` removes one)."""
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            data["tuning"].pop(key, None)
        else:
            data["tuning"][key] = value
    return data


def continuous(low: float, high: float, scaling: str) -> dict[str, Any]:
    return {"type": "continuous", "min": low, "max": high, "scaling": scaling}


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        smdist.plan(data)
    return [str(problem) for problem in caught.value.problems]


def the_problem(data: dict[str, Any], path: str) -> str:
    found = [text for text in problems(data) if text.startswith(path + ":")]
    assert found, problems(data)
    return found[0]


def test_the_example_plans_with_its_search():
    spec = smdist.load(EXAMPLE)
    plan = smdist.plan(spec)
    assert spec.tuning.parameters["learning_rate"].scaling == "Logarithmic"
    assert spec.tuning.parameters["batch_size"].values == [32, 64, 128]
    assert plan.metric_definitions == metric_definitions(spec)
    assert tuning_name_prefix(spec) == "ddp-tuning"


def test_a_bound_yaml_reads_as_a_string_is_taken_as_its_number():
    data = job(parameters={"learning_rate": {"type": "continuous", "min": "1e-4", "max": 0.1}})
    assert as_job_spec(data).tuning.parameters["learning_rate"].min == 1e-4


def test_a_bound_that_is_no_number_names_the_field():
    data = job(parameters={"lr": {"type": "continuous", "min": "small", "max": 0.1}})
    assert "'small' is not a number" in the_problem(data, "tuning.parameters.lr.min")


def test_an_unknown_key_of_a_range_is_named_with_the_keys_of_its_type():
    data = job(parameters={"lr": {"type": "continuous", "min": 0.1, "max": 1, "scalng": "Auto"}})
    assert "did you mean 'scaling'? valid keys: max, min, scaling, type" in the_problem(
        data, "tuning.parameters.lr.scalng"
    )


def test_a_hyperparameter_named_like_a_range_type_keeps_its_name_in_the_path():
    data = job(parameters={"integer": {"type": "continuous", "min": "small", "max": 0.1}})
    assert "'small' is not a number" in the_problem(data, "tuning.parameters.integer.min")


def test_user_metric_definitions_feed_the_objective_and_replace_a_standard_one():
    data = job(objective={"metric": "val:acc", "type": "Maximize"})
    data["metric_definitions"] = [
        {"name": "val:acc", "regex": r"val_acc=([0-9.]+)"},
        {"name": "train:loss", "regex": r"loss: ([0-9.]+)"},
    ]
    spec = as_job_spec(data)
    smdist.plan(spec)
    names = [d["Name"] for d in metric_definitions(spec)]
    assert names.count("train:loss") == 1 and "val:acc" in names
    assert {"Name": "train:loss", "Regex": r"loss: ([0-9.]+)"} in metric_definitions(spec)


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"objective": {"metric": "val:acc"}}, "tuning.objective.metric", "train:loss"),
        ({"strategy": "Grid"}, "tuning.parameters.learning_rate.type", "categorical"),
        ({"max_jobs": None}, "tuning.max_jobs", "required"),
        ({"max_parallel_jobs": 20}, "tuning.max_parallel_jobs", "at most 12"),
        ({"hyperband": {"min_resource": 1, "max_resource": 3}}, "tuning.hyperband", "Hyperband"),
        ({"strategy": "Hyperband"}, "tuning.early_stopping", "Hyperband"),
        ({"name": "a-tuning-prefix-far-too-long"}, "tuning.name", "1-18"),
        ({"warm_start": {"parents": ["bad_name!"]}}, "tuning.warm_start.parents", "bad_name!"),
        ({"early_stoping": True}, "tuning.early_stoping", "early_stopping"),
        ({"strategy": "bayesian"}, "tuning.strategy", "Bayesian"),
        (
            {"parameters": {"lr": continuous(0, 1, "Logarithmic")}},
            "tuning.parameters.lr.min",
            "greater than 0",
        ),
        (
            {"parameters": {"lr": continuous(0.1, 1.5, "ReverseLogarithmic")}},
            "tuning.parameters.lr",
            "0 <= min < max < 1",
        ),
        (
            {"parameters": {"layers": {"type": "integer", "min": 4, "max": 2}}},
            "tuning.parameters.layers.max",
            "greater than min",
        ),
        (
            {"parameters": {"opt": {"type": "categorical", "values": ["adam", "adam"]}}},
            "tuning.parameters.opt.values",
            "twice",
        ),
        (
            {"parameters": {"sagemaker_program": {"type": "categorical", "values": ["a"]}}},
            "tuning.parameters.sagemaker_program",
            "reserved",
        ),
        (
            {"parameters": {"epochs": {"type": "integer", "min": 1, "max": 5}}},
            "tuning.parameters.epochs",
            "also set under hyperparameters",
        ),
        (
            {"parameters": {f"p{i}": {"type": "integer", "min": 0, "max": 9} for i in range(31)}},
            "tuning.parameters",
            "at most 30",
        ),
        (
            {"parameters": {"opt": {"type": "categorical", "values": list(range(31))}}},
            "tuning.parameters.opt.values",
            "at most 30",
        ),
    ],  # fmt: skip
)
def test_a_bad_tuning_section_is_refused_naming_the_field(changes, path, words):
    assert words in the_problem(job(**changes), path)


def test_a_tuning_jobs_trials_take_at_most_48_environment_entries():
    data = job()
    data["environment"] = {f"VAR_{i}": "x" for i in range(60)}
    assert "at most" in the_problem(data, "environment")


def test_a_metric_regex_that_captures_nothing_is_refused():
    data = job()
    data["metric_definitions"] = [{"name": "acc", "regex": "acc=[0-9.]+"}]
    assert "captures nothing" in the_problem(data, "metric_definitions[0].regex")


def test_the_command_line_refuses_a_bad_section_with_exit_2(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job(strategy="Grid")))
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "tuning.parameters.learning_rate.type" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_schema_describes_the_tuning_section():
    schema = json.dumps(smdist.JobSpec.model_json_schema())
    for word in ("ContinuousRange", "CategoricalRange", "Hyperband", "metric_definitions"):
        assert word in schema


def test_a_local_search_says_it_starts_without_the_warm_start_parents():
    from smdist.backends.local.tuning import local_notes

    spec = as_job_spec(job(warm_start={"parents": ["earlier-search"]}))
    assert local_notes(as_job_spec(job()).tuning) == []
    (note,) = local_notes(spec.tuning)
    assert "earlier-search" in note and "tuning.warm_start" in note


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--local", "--dry-run"], "--dry-run"),
        (["--local", "--bucket", "b", "--region", "us-east-1"], "--bucket"),
        (["--hosts", "2", "--dry-run"], "--hosts"),
        (["--fresh", "--dry-run"], "--fresh"),
    ],
)
def test_tune_refuses_an_option_the_chosen_place_does_not_use(args, named, capsys):
    from smdist.cli.app import main

    assert main(["tune", str(EXAMPLE), *args]) == 2
    err = capsys.readouterr().err
    assert f"{named}:" in err and "Traceback" not in err


def test_a_categorical_value_that_looks_like_a_credential_is_refused():
    key = "AKIA" + "QWERTYUIOPASDFGH"  # an access key id's shape
    data = job(parameters={"token_kind": {"type": "categorical", "values": ["plain", key]}})
    assert "credential" in the_problem(data, "tuning.parameters.token_kind.values[1]")


def test_a_categorical_value_longer_than_the_api_takes_is_refused():
    data = job(parameters={"prompt": {"type": "categorical", "values": ["x" * 300]}})
    assert "at most 256" in the_problem(data, "tuning.parameters.prompt.values[0]")


def validate_output(tmp_path: Path, data: dict[str, Any], capsys) -> str:
    from smdist.cli.app import main

    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(path)]) == 0
    return " ".join(capsys.readouterr().err.split())  # the console wraps long lines


def test_a_job_name_too_long_for_the_tuning_job_is_cut_with_a_warning(tmp_path, capsys):
    data = job()
    data["name"] = "resnet50-imagenet-lr-sweep"
    err = validate_output(tmp_path, data, capsys)
    assert "warning: name:" in err and "HyperParameterTuningJobName" in err
    assert "'resnet50-imagenet-lr-sweep'" in err and "at most 32" in err
    assert "named resnet50-imagenet-<yymmdd-HHMMSS>" in err and "tuning.name" in err


def test_a_job_name_that_fits_or_a_tuning_name_needs_no_warning(tmp_path, capsys):
    assert "warning" not in validate_output(tmp_path, job(), capsys)
    data = job(name="lr-sweep")
    data["name"] = "resnet50-imagenet-lr-sweep"
    assert "warning" not in validate_output(tmp_path, data, capsys)
