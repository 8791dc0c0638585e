"""Checks of a job's ``tuning:`` section and metric definitions, against the tuning API's limits.

Run with the job's other checks, before any call: a tuning job the API would refuse after the
code was uploaded, or one that would launch trials that cannot be compared, is refused here with
the field that is wrong. The limits come from botocore's model (``sagemaker_api.json``); the
rules the model cannot state (Grid takes only categorical ranges, logarithmic scaling needs a
positive minimum, at most 30 ranges in all) from the API reference.

This module checks the search as a whole: its objective, its name, its strategy and how many
values its trials carry. Each range on its own is ``smdist.checks.tuning_ranges``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist.catalog import api
from smdist.checks.environment_variables import added_environment
from smdist.checks.tuning_ranges import parameter_problems
from smdist.errors import Problem
from smdist.runtime.metrics import metric_definitions as standard_metric_definitions
from smdist.spec.job import JobSpec

if TYPE_CHECKING:  # the models are built only for a job with a tuning: section
    from smdist.spec.tuning import Tuning

# "the sum of the number of hyperparameters for all the ranges can't exceed" the list maximum
MAX_RANGES = api.field("tuning_ranges").limit
MAX_HYPERPARAMETERS = 100  # static + tuned, stated in the tuning guide
# SDK v2's name_from_base(short=True): a 13-character timestamp after a hyphen
TUNING_NAME_SUFFIX = 14


def metric_definitions(spec: JobSpec) -> list[dict[str, str]]:
    """The job's metric definitions as the API takes them: the ready scripts' ``train:*``
    metrics, then the user's (a user definition of the same name replaces the standard one)."""
    own = [definition.as_api() for definition in spec.metric_definitions]
    names = {definition["Name"] for definition in own}
    return [d for d in standard_metric_definitions() if d["Name"] not in names] + own


def tuning_name_prefix(spec: JobSpec) -> str:
    """The tuning job's name before the timestamp smdist appends."""
    limit = api.field("tuning_job_name").limit - TUNING_NAME_SUFFIX
    if spec.tuning is not None and spec.tuning.name:
        return spec.tuning.name
    return spec.name[:limit].rstrip("-")


def check_metric_definitions(spec: JobSpec) -> list[Problem]:
    problems = []
    seen: set[str] = set()
    for index, definition in enumerate(spec.metric_definitions):
        if definition.name in seen:
            problems.append(
                Problem(f"metric_definitions[{index}].name", "is defined twice", definition.name)
            )
        seen.add(definition.name)
    limit = api.field("tuning_metric_definitions").limit
    count = len(metric_definitions(spec))
    if count > limit:
        problems.append(
            Problem(
                "metric_definitions",
                f"{count} metric definitions with the ready scripts' own; SageMaker accepts at "
                f"most {limit}",
                valid=f"at most {limit - count + len(spec.metric_definitions)} of your own",
            )
        )
    return problems


def check_tuning(spec: JobSpec, static_hyperparameters: int) -> list[Problem]:
    """Every problem of ``spec.tuning``; ``static_hyperparameters``: how many fixed values each
    trial sends (the user's and the launch's)."""
    tuning = spec.tuning
    if tuning is None:
        return []
    problems = _objective_problems(spec, tuning)
    problems += _name_problems(spec, tuning)
    for name, parameter in tuning.parameters.items():
        problems += parameter_problems(spec, name, parameter)
    problems += _strategy_problems(tuning)
    problems += _count_problems(spec, tuning, static_hyperparameters)
    return problems


def _objective_problems(spec: JobSpec, tuning: Tuning) -> list[Problem]:
    names = [definition["Name"] for definition in metric_definitions(spec)]
    if tuning.objective.metric in names:
        return []
    return [
        Problem(
            "tuning.objective.metric",
            "is not produced by any metric definition, so no trial would report it",
            tuning.objective.metric,
            ", ".join(names) + " (or add it under metric_definitions)",
        )
    ]


def _name_problems(spec: JobSpec, tuning: Tuning) -> list[Problem]:
    field = api.field("tuning_job_name")
    limit = field.limit - TUNING_NAME_SUFFIX
    if tuning.name is None:
        return _cut_name_warning(spec, limit)
    if len(tuning.name) <= limit and field.matches(tuning.name):
        return []
    return [
        Problem(
            "tuning.name",
            "is not a usable tuning job name prefix (smdist appends a 14-character timestamp)",
            tuning.name,
            f"1-{limit} letters, digits and hyphens, starting and ending with a letter or digit",
        )
    ]


def _cut_name_warning(spec: JobSpec, limit: int) -> list[Problem]:
    """Without a ``tuning.name`` the tuning job is named after the job, cut to fit: said, not
    refused. The job's name is valid (training jobs take 63 characters) and a search under a
    shorter name works the same, so refusing would make every long-named job edit its file to
    tune; a cut nobody is told of, though, leaves a search the user cannot find by its name.
    The warning names what will be used and how to choose instead (``tuning.name``)."""
    used = tuning_name_prefix(spec)
    if used == spec.name:
        return []
    field = api.field("tuning_job_name")
    return [
        Problem(
            "name",
            f"is {len(spec.name)} characters; the tuning job's name "
            f"(HyperParameterTuningJobName) takes at most {field.limit} and smdist appends a "
            f"{TUNING_NAME_SUFFIX}-character timestamp, so the search is named "
            f"{used}-<yymmdd-HHMMSS>",
            spec.name,
            f"set tuning.name (at most {limit} characters) to choose the name",
            severity="warning",
        )
    ]


def _strategy_problems(tuning: Tuning) -> list[Problem]:
    problems = []
    strategy = tuning.strategy
    if strategy == "Grid":
        for name, parameter in tuning.parameters.items():
            if parameter.type != "categorical":
                problems.append(
                    Problem(
                        f"tuning.parameters.{name}.type",
                        "Grid search takes categorical ranges only",
                        parameter.type,
                        "categorical (list the values), or strategy: Random or Bayesian",
                    )
                )
    if tuning.hyperband is not None and strategy != "Hyperband":
        problems.append(
            Problem("tuning.hyperband", f"is for strategy Hyperband, not {strategy}", None)
        )
    band = tuning.hyperband
    if band is not None and band.min_resource > band.max_resource:
        problems.append(
            Problem(
                "tuning.hyperband.max_resource",
                f"is below min_resource ({band.min_resource})",
                band.max_resource,
            )
        )
    if strategy == "Hyperband" and tuning.early_stopping:
        problems.append(
            Problem(
                "tuning.early_stopping",
                "Hyperband stops lagging trials itself; the API refuses early stopping with it",
                True,
                "false",
            )
        )
    if strategy != "Grid" and tuning.max_jobs is None:
        problems.append(
            Problem("tuning.max_jobs", f"is required with strategy {strategy}", None, ">= 1")
        )
    jobs = tuning.max_jobs
    if jobs is not None and tuning.max_parallel_jobs > jobs:
        problems.append(
            Problem(
                "tuning.max_parallel_jobs",
                f"is more than max_jobs ({jobs})",
                tuning.max_parallel_jobs,
                f"at most {jobs}",
            )
        )
    return problems


def _count_problems(spec: JobSpec, tuning: Tuning, static: int) -> list[Problem]:
    problems = []
    if len(tuning.parameters) > MAX_RANGES:
        problems.append(
            Problem(
                "tuning.parameters",
                f"has {len(tuning.parameters)} ranges; a tuning job searches at most {MAX_RANGES}",
            )
        )
    total = static + len(tuning.parameters)
    if total > MAX_HYPERPARAMETERS:
        problems.append(
            Problem(
                "tuning.parameters",
                f"{len(tuning.parameters)} tuned plus {static} fixed hyperparameters; a tuning "
                f"job's trials take at most {MAX_HYPERPARAMETERS} in all",
            )
        )
    limit = api.field("tuning_environment").limit
    added = len(added_environment(spec))
    if len(spec.environment) + added > limit:
        problems.append(
            Problem(
                "environment",
                f"has {len(spec.environment)} entries plus the {added} smdist adds; a tuning "
                f"job's trials take at most {limit}",
                valid=f"at most {limit - added} entries when tuning",
            )
        )
    return problems
