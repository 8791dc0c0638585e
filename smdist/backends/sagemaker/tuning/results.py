"""A tuning job's trials, read from what the API returns, as the shared ``TuningResult``.

Pure: the job handle (``job``) makes the calls and hands the responses here, so the parsing is
tested against responses shaped like the real API's without any service.

- Trial numbers follow SageMaker's own: a trial is named ``<tuning job>-<NNN>-<hex>`` with
  ``NNN`` counted from 1, so ``Trial.number`` (from 0) is ``NNN - 1`` and matches the
  console. A name of another shape is numbered by creation time, after the others.
- Tuned values arrive as the strings the trial was given: categorical ones JSON-encoded (as
  smdist sent them), bounds as decimal text. Each is decoded as the toolkit decodes it
  (``json.loads``, the raw string when that fails), so ``64`` is the number 64 and ``"adam"``
  the string adam.
"""

from __future__ import annotations

import json
import re
from typing import Any

from smdist.backends.tuning_results import Trial, TuningResult


def decode(value: str) -> Any:
    """A hyperparameter as the training toolkit reads it: JSON where it parses, else the text."""
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def trial_number(tuning_job: str, training_job: str) -> int | None:
    """SageMaker's sequence number of a trial (from 0), or None for a name of another shape."""
    match = re.fullmatch(re.escape(tuning_job) + r"-(\d{3,})-[0-9a-zA-Z]+", training_job)
    return int(match.group(1)) - 1 if match else None


def objective_value(summary: dict[str, Any]) -> float | None:
    metric = summary.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
    value = metric.get("Value")
    return None if value is None else float(value)


def trial(summary: dict[str, Any], number: int, model: str | None = None) -> Trial:
    """One ``HyperParameterTrainingJobSummary`` as a Trial."""
    return Trial(
        number=number,
        name=summary["TrainingJobName"],
        values={k: decode(v) for k, v in (summary.get("TunedHyperParameters") or {}).items()},
        objective=objective_value(summary),
        status=summary.get("TrainingJobStatus", "Pending"),
        model=model,
        reason=summary.get("FailureReason"),
    )


def numbered(tuning_job: str, summaries: list[dict[str, Any]]) -> list[tuple[int, dict]]:
    """Each summary with its trial number: SageMaker's where the name has it, else by
    creation time after the highest one seen."""
    found = [(trial_number(tuning_job, s["TrainingJobName"]), s) for s in summaries]
    next_number = max((n for n, _ in found if n is not None), default=-1) + 1
    result = []
    others = sorted(
        (s for n, s in found if n is None),
        key=lambda s: (str(s.get("CreationTime", "")), s["TrainingJobName"]),
    )
    for summary in others:
        result.append((next_number, summary))
        next_number += 1
    result += [(n, s) for n, s in found if n is not None]
    return sorted(result, key=lambda item: item[0])


def tuning_result(
    description: dict[str, Any],
    summaries: list[dict[str, Any]],
    models: dict[str, str | None],
) -> TuningResult:
    """The result of the tuning job ``description`` (DescribeHyperParameterTuningJob) with
    its trials ``summaries`` and the trials' ``models`` (training job name -> S3 URI)."""
    name = description["HyperParameterTuningJobName"]
    objective = description["HyperParameterTuningJobConfig"].get(
        "HyperParameterTuningJobObjective", {}
    )
    return TuningResult(
        name=name,
        backend="sagemaker",
        objective_metric=objective.get("MetricName", ""),
        objective_type=objective.get("Type", "Minimize"),
        trials=[
            trial(summary, number, models.get(summary["TrainingJobName"]))
            for number, summary in numbered(name, summaries)
        ],
        status=description["HyperParameterTuningJobStatus"],
    )


def counts_line(description: dict[str, Any]) -> str:
    """``3 completed, 1 in progress, 0 failed, 0 stopped`` from the job's counters."""
    counters = description.get("TrainingJobStatusCounters") or {}
    failed = counters.get("RetryableError", 0) + counters.get("NonRetryableError", 0)
    return (
        f"{counters.get('Completed', 0)} completed, {counters.get('InProgress', 0)} in progress, "
        f"{failed} failed, {counters.get('Stopped', 0)} stopped"
    )
