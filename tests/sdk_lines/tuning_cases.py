"""Every example turned into a search, and the comparisons of a tuning request with submit's,
for ``test_tuning.py``. No test is defined here."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from smdist import catalog
from smdist.backends.sagemaker.tuning import request as tuning_request

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(path.name for path in EXAMPLES_DIR.glob("*.yaml"))
TUNING_EXAMPLE = EXAMPLES_DIR / "tuning" / "pytorch_ddp.yaml"
TUNED = ("learning_rate", "batch_size")
# Hyperparameters whose value names the job: submit's the training job, a search's the tuning
# job (SageMaker names each trial itself).
PER_JOB_HYPERPARAMETERS = ("sagemaker_job_name", "model_dir")


def example(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES_DIR / name).read_text())


def tuning_variant(data: dict[str, Any], **tuning: Any) -> dict[str, Any]:
    """The job searched: ``learning_rate`` (log-scaled) and ``batch_size`` (categorical) moved
    from its hyperparameters into a ``tuning:`` section, objective train:loss minimised."""
    data = copy.deepcopy(data)
    fixed = data.setdefault("hyperparameters", {})
    rate = float(fixed.pop("learning_rate", 0.01))
    batch = fixed.pop("batch_size", 64)
    data["tuning"] = {
        "objective": {"metric": "train:loss", "type": "Minimize"},
        "parameters": {
            "learning_rate": {
                "type": "continuous",
                "min": rate / 10,
                "max": rate * 10,
                "scaling": "Logarithmic",
            },
            "batch_size": {"type": "categorical", "values": [batch // 2, batch, batch * 2]},
        },
        "strategy": "Bayesian",
        "max_jobs": 4,
        "max_parallel_jobs": 2,
        **tuning,
    }
    return data


def write(tmp_path: Path, data: dict[str, Any], name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def botocore_problems(operation: str, params: dict[str, Any]) -> str:
    """botocore's own validation of ``params`` against the service model ('' when valid)."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    return report.generate_report() if report.has_errors() else ""


def model_members(shape: str) -> set[str]:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return set(model.shape_for(shape).members)


def assert_every_field_has_a_place(training: dict[str, Any]) -> None:
    """Every field of submit's request is carried into the definition, moved, or named as
    having no place in the tuning API (with why): none is dropped in silence."""
    placed = (
        set(tuning_request.DEFINITION_FIELDS)
        | set(tuning_request.PER_JOB_FIELDS)
        | set(tuning_request.MOVED_FIELDS)
        | set(tuning_request.NOT_IN_TUNING)
    )
    assert set(training) <= placed, f"submit's request gained {set(training) - placed}"
    algorithm = set(tuning_request.ALGORITHM_FIELDS) | set(tuning_request.ALGORITHM_NOT_IN_TUNING)
    assert set(training["AlgorithmSpecification"]) <= algorithm


def assert_model_coverage() -> None:
    """The definition takes every CreateTrainingJob field HyperParameterTrainingJobDefinition
    has (botocore's model): one that both have and smdist does not carry would fail here."""
    definition = model_members("HyperParameterTrainingJobDefinition")
    training = model_members("CreateTrainingJobRequest")
    carried = set(tuning_request.DEFINITION_FIELDS) | {"AlgorithmSpecification"}
    assert (definition & training) <= carried, (definition & training) - carried
    assert set(tuning_request.DEFINITION_FIELDS) <= definition
    assert set(tuning_request.ALGORITHM_FIELDS) <= model_members(
        "HyperParameterAlgorithmSpecification"
    )
    for name in tuning_request.NOT_IN_TUNING:
        assert name not in definition
    for name in tuning_request.ALGORITHM_NOT_IN_TUNING:
        assert name not in model_members("HyperParameterAlgorithmSpecification")


def assert_trials_launch_as_submit(
    definition: dict[str, Any], training: dict[str, Any], tuning_name: str, training_name: str
) -> None:
    """The definition equals submit's CreateTrainingJob ``training`` field by field, apart
    from the tuned hyperparameters and the values that name the job."""
    assert_every_field_has_a_place(training)
    for field in tuning_request.DEFINITION_FIELDS:
        assert definition.get(field) == training.get(field), field
    algorithm = {
        k: v
        for k, v in training["AlgorithmSpecification"].items()
        if k not in tuning_request.ALGORITHM_NOT_IN_TUNING
    }
    assert definition["AlgorithmSpecification"] == algorithm
    static, fixed = definition["StaticHyperParameters"], training["HyperParameters"]
    assert not set(TUNED) & set(static)
    shared = set(PER_JOB_HYPERPARAMETERS) | set(TUNED)
    assert {k: v for k, v in static.items() if k not in shared} == {
        k: v for k, v in fixed.items() if k not in shared
    }
    assert static["sagemaker_job_name"] == json.dumps(tuning_name)
    assert fixed["sagemaker_job_name"] == json.dumps(training_name)
    if "model_dir" in fixed:  # TensorFlow: the same rule, the tuning job's name in it
        assert static["model_dir"] == fixed["model_dir"].replace(training_name, tuning_name)
    assert set(definition) - {"StaticHyperParameters", "AlgorithmSpecification"} <= set(
        tuning_request.DEFINITION_FIELDS
    )


def assert_described_as_sent(described: dict[str, Any], request: dict[str, Any]) -> None:
    """DescribeHyperParameterTuningJob returns the definition and configuration sent."""
    assert described["HyperParameterTuningJobName"] == request["HyperParameterTuningJobName"]
    assert described["HyperParameterTuningJobConfig"] == request["HyperParameterTuningJobConfig"]
    assert described["TrainingJobDefinition"] == request["TrainingJobDefinition"]
    assert described.get("WarmStartConfig") == request.get("WarmStartConfig")


def _ready_tensorflow(data: dict[str, Any]) -> bool:
    strategy, code = data["strategy"], data.get("code", {})
    framework = code.get("framework") or strategy.get("framework")
    tensorflow = strategy["kind"] in ("mwms", "parameter_server") or framework == "tensorflow"
    return tensorflow and not code.get("entry_point") and not code.get("image_uri")


def rich_job(data: dict[str, Any], spot: bool = True) -> dict[str, Any]:
    """``data`` with every optional setting that reaches the request: inputs, output, VPC,
    isolation, encryption, checkpoints, KMS, tags, environment, metrics, and spot (``spot``)
    or else a warm pool (SageMaker takes one or the other). A volume KMS key only where the
    instance type has an EBS volume: on NVMe instance storage SageMaker refuses one."""
    data = copy.deepcopy(data)
    data.update(
        inputs={"train": {"uri": "s3://data-bucket/train/", "distribution": "ShardedByS3Key"}},
        output_path="s3://out-bucket/models/",
        checkpoint={"s3_uri": "s3://out-bucket/checkpoints/"},
        network={
            "subnets": ["subnet-0123456789abcdef0"],
            "security_group_ids": ["sg-0123456789abcdef0"],
            "isolation": True,
            "encrypt_inter_container_traffic": True,
        },
        kms={"output_key_id": "alias/out"},
        tags={"team": "ml"},
        environment={"MY_SETTING": "1"},
        metric_definitions=[{"name": "val:loss", "regex": "val_loss=(\\S+)"}],
    )
    if _ready_tensorflow(data):
        # A ready TensorFlow script on a Keras-3-only image (2.16+) installs tf-keras at start,
        # which isolation forbids (exit 2): isolation goes with the 2.14 image's own Keras 2.
        data["code"] = {**data.get("code", {}), "framework_version": "2.14", "py_version": "py310"}
    info = catalog.instance(data["cluster"]["instance_type"])
    if info is not None and info.instance_storage != "nvme":
        data["kms"]["volume_key_id"] = "alias/vol"
    if spot:
        data["spot"] = {"enabled": True, "max_wait": 2 * data.get("max_run", 3600)}
    else:
        data["keep_alive"] = 600
    return data
