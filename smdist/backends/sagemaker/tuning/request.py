"""The CreateHyperParameterTuningJob request of a Submission: every trial launched as submit
launches the job.

The training-job definition is not rendered a second time: it is submit's SDK v2
CreateTrainingJob request (``request.create_training_job_request``, the same Submission),
each of its fields moved to where the tuning API takes it. A field that request gains and
this module does not place is an error, never dropped in silence (``DEFINITION_FIELDS``,
``NOT_IN_TUNING``), and a setting it has no place for is refused before anything is sent
(``tuning_problems``, naming the spec field).

Whichever SDK line is installed, the trials start through the training toolkit (the SDK v2
route: ``sagemaker_program``, ``sagemaker_submit_directory`` and the strategy's
``sagemaker_*`` hyperparameters), because the tuning API's algorithm specification has no
``ContainerEntrypoint``: SDK v3's ``sm_train.sh`` and its drivers channel could not start a
trial, while every framework image's toolkit runs every strategy smdist renders.

Ranges and values are encoded as SDK v2's framework tuner encodes them: bounds as strings
(``str`` of the number), categorical values JSON-encoded (``CategoricalParameter.as_json_range``)
like every fixed hyperparameter (``catalog.wire``), so the toolkit decodes a tuned value as it
decodes a fixed one and the script gets ``--batch_size 64`` either way. Ranges and the objective
go in ``HyperParameterTuningJobConfig``, as SDK v2 sends them for a single estimator.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.sagemaker import job_settings
from smdist.backends.sagemaker import request as request_
from smdist.catalog import wire
from smdist.checks.tuning_section import require_tuning as require_section
from smdist.errors import Problem, SpecError
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission
from smdist.spec.tuning import CategoricalRange, ContinuousRange, IntegerRange, Tuning

# CreateTrainingJob fields that HyperParameterTrainingJobDefinition takes under the same name.
DEFINITION_FIELDS = (
    "RoleArn",
    "InputDataConfig",
    "VpcConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "StoppingCondition",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "RetryStrategy",
    "Environment",
)
# The rest of submit's request, and where each goes.
PER_JOB_FIELDS = ("TrainingJobName",)  # SageMaker names every trial itself
MOVED_FIELDS = {
    "HyperParameters": "TrainingJobDefinition.StaticHyperParameters (tuned names left out)",
    "AlgorithmSpecification": "TrainingJobDefinition.AlgorithmSpecification",
    "Tags": "the tuning job's Tags (SageMaker tags every trial with them)",
}
# Fields the tuning API has no place for; what that means for the trials.
NOT_IN_TUNING = {
    "ProfilerConfig": "trials run without SageMaker Debugger's profiler unless asked: the "
    "tuning API takes no profiler settings",
}
# Fields a job states on purpose that the tuning API has no place for: the spec field that sets
# each, and what the trials would go without. Refused (``tuning_problems``), never dropped.
REFUSED_IN_TUNING = {
    "TensorBoardOutputConfig": ("tensorboard", "write TensorBoard logs to S3"),
    "InfraCheckConfig": ("infra_check", "run SageMaker's infrastructure checks first"),
    "RemoteDebugConfig": ("remote_debug", "be debugged remotely"),
    "MlflowConfig": ("mlflow", "log to SageMaker's managed MLflow"),
}
ALGORITHM_FIELDS = ("TrainingImage", "TrainingInputMode", "AlgorithmName", "MetricDefinitions")
ALGORITHM_NOT_IN_TUNING = {
    "EnableSageMakerMetricsTimeSeries": "the tuning API reads the metric definitions for every "
    "trial itself and takes no time-series switch",
}
EARLY_STOPPING = {True: "Auto", False: "Off"}


def require_tuning(plan: Plan) -> Tuning:
    """The plan's ``tuning:`` section; SpecError naming the field when the job has none."""
    return require_section(plan.spec)


def tuning_problems(plan: Plan) -> list[Problem]:
    """The job's settings a tuning job's training-job definition cannot carry
    (HyperParameterTrainingJobDefinition has no such field), each naming its spec field."""
    spec = plan.spec
    stated = job_settings.tracking_fields(spec, "<bucket>", plan.job_name)
    problems = []
    for name, (field, what) in REFUSED_IN_TUNING.items():
        if name not in stated:
            continue
        value = getattr(spec, field)
        problems.append(
            Problem(
                field,
                f"a tuning job's training jobs cannot {what}: CreateHyperParameterTuningJob's "
                f"training-job definition takes no {name}",
                value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value,
                f"leave {field} out of a job with a tuning: section",
            )
        )
    return problems


def check(plan: Plan) -> None:
    """The tuning route's check: a ``tuning:`` section, and nothing the trials cannot carry."""
    require_tuning(plan)
    problems = tuning_problems(plan)
    if problems:
        raise SpecError(problems)


def parameter_ranges(tuning: Tuning) -> dict[str, list[dict[str, Any]]]:
    """``ParameterRanges``: bounds as strings, categorical values JSON-encoded (SDK v2)."""
    ranges: dict[str, list[dict[str, Any]]] = {}
    for name, parameter in tuning.parameters.items():
        if isinstance(parameter, CategoricalRange):
            values = [wire.encode(value) for value in parameter.values]
            ranges.setdefault("CategoricalParameterRanges", []).append(
                {"Name": name, "Values": values}
            )
            continue
        key = (
            "IntegerParameterRanges"
            if isinstance(parameter, IntegerRange)
            else "ContinuousParameterRanges"
        )
        ranges.setdefault(key, []).append(_bounds(name, parameter))
    return ranges


def _bounds(name: str, parameter: ContinuousRange | IntegerRange) -> dict[str, Any]:
    return {
        "Name": name,
        "MinValue": str(parameter.min),
        "MaxValue": str(parameter.max),
        "ScalingType": parameter.scaling,
    }


def tuning_job_config(tuning: Tuning) -> dict[str, Any]:
    """``HyperParameterTuningJobConfig``, in the order SDK v2's ``_map_tuning_config`` builds it."""
    limits: dict[str, Any] = {}
    if tuning.max_jobs is not None:  # Grid, left out: every combination
        limits["MaxNumberOfTrainingJobs"] = tuning.max_jobs
    limits["MaxParallelTrainingJobs"] = tuning.max_parallel_jobs
    if tuning.max_runtime is not None:
        limits["MaxRuntimeInSeconds"] = tuning.max_runtime
    config: dict[str, Any] = {
        "Strategy": tuning.strategy,
        "ResourceLimits": limits,
        "TrainingJobEarlyStoppingType": EARLY_STOPPING[tuning.early_stopping],
    }
    if tuning.random_seed is not None:
        config["RandomSeed"] = tuning.random_seed
    config["HyperParameterTuningJobObjective"] = {
        "Type": tuning.objective.type,
        "MetricName": tuning.objective.metric,
    }
    config["ParameterRanges"] = parameter_ranges(tuning)
    if tuning.hyperband is not None:
        config["StrategyConfig"] = {
            "HyperbandStrategyConfig": {
                "MinResource": tuning.hyperband.min_resource,
                "MaxResource": tuning.hyperband.max_resource,
            }
        }
    return config


def _algorithm(training: dict[str, Any]) -> dict[str, Any]:
    algorithm = training["AlgorithmSpecification"]
    unplaced = set(algorithm) - set(ALGORITHM_FIELDS) - set(ALGORITHM_NOT_IN_TUNING)
    if unplaced:
        raise AssertionError(f"AlgorithmSpecification fields with no place in tuning: {unplaced}")
    return {key: algorithm[key] for key in ALGORITHM_FIELDS if key in algorithm}


def training_job_definition(training: dict[str, Any], tuned: set[str]) -> dict[str, Any]:
    """``TrainingJobDefinition`` from submit's CreateTrainingJob request ``training``: every
    field carried over, the hyperparameters static but for the ``tuned`` names."""
    placed = set(DEFINITION_FIELDS) | set(PER_JOB_FIELDS) | set(MOVED_FIELDS) | set(NOT_IN_TUNING)
    unplaced = set(training) - placed
    if unplaced:  # a bug in smdist: a field this module does not place, or one check let by
        raise AssertionError(f"CreateTrainingJob fields with no place in tuning: {unplaced}")
    static = {k: v for k, v in training["HyperParameters"].items() if k not in tuned}
    definition: dict[str, Any] = {
        "StaticHyperParameters": static,
        "AlgorithmSpecification": _algorithm(training),
    }
    definition.update({key: training[key] for key in DEFINITION_FIELDS if key in training})
    return definition


def create_tuning_job_request(submission: Submission, *, image: str) -> dict[str, Any]:
    """The CreateHyperParameterTuningJob parameters of ``submission``, bound to the tuning
    job's name (what the toolkit's ``sagemaker_job_name`` and TensorFlow's ``model_dir`` read)."""
    tuning = require_tuning(submission.plan)
    training = request_.create_training_job_request(submission, image=image)
    request: dict[str, Any] = {
        "HyperParameterTuningJobName": submission.job_name,
        "HyperParameterTuningJobConfig": tuning_job_config(tuning),
        "TrainingJobDefinition": training_job_definition(training, set(tuning.parameters)),
    }
    if tuning.warm_start is not None:
        request["WarmStartConfig"] = {
            "ParentHyperParameterTuningJobs": [
                {"HyperParameterTuningJobName": parent} for parent in tuning.warm_start.parents
            ],
            "WarmStartType": tuning.warm_start.type,
        }
    if training.get("Tags"):
        request["Tags"] = list(training["Tags"])
    return request


def render(submission: Submission) -> dict[str, Any]:
    """The request, with the training image smdist's catalogue names (as submit's)."""
    image = request_.training_image(submission.plan, submission.region)
    return create_tuning_job_request(submission, image=image)
