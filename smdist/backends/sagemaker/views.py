"""SageMaker's training and tuning jobs as ``status``, ``logs`` and ``stop`` show them.

A name that is no training job but is a hyperparameter tuning job stands for the tuning job:
``status`` shows its status, trial counts and best trial, ``stop`` stops the search, and
``logs`` shows one trial's logs (the best one, or ``--job TRAINING_JOB``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from smdist.backends.views import JobView, ReportEnd, Say

ENDED = ("Failed", "Stopped")


class _RemoteView(JobView):
    """A job SageMaker runs: described by its Describe call, stopped by its Stop call."""

    def __init__(self, job: Any) -> None:
        self.job, self.name = job, job.name

    def status_document(self) -> dict[str, Any]:
        return self.job.describe()

    def stop(self, say: Say, *, wait: bool, poll: float, report_end: ReportEnd) -> None:
        self.job.stop()
        say(f"{self.name}: stop requested")
        if wait:
            report_end(self.job, self.job.wait())


class TrainingJobView(_RemoteView):
    def status_lines(self) -> list[str]:
        description = self.job.describe()
        state = description["TrainingJobStatus"]
        lines = [f"{self.name}\t{state}\t{description.get('SecondaryStatus', '')}"]
        if description.get("FailureReason"):
            lines.append(f"reason: {description['FailureReason']}")
        artifacts = (description.get("ModelArtifacts") or {}).get("S3ModelArtifacts")
        if state == "Completed" and artifacts:
            lines.append(f"model: {artifacts}")
        return lines

    @property
    def exit_code(self) -> int:
        return 1 if self.job.describe()["TrainingJobStatus"] in ENDED else 0

    def logs(self, follow: bool) -> Iterator[str]:
        return self.job.logs(follow=follow)


class TuningJobView(_RemoteView):
    def status_lines(self) -> list[str]:
        # lazy: the tuning job's counts and values, for its status only
        from smdist.backends.sagemaker.tuning import results

        description = self.job.describe()
        state = description["HyperParameterTuningJobStatus"]
        lines = [f"{self.name}\t{state}\ttuning job: {results.counts_line(description)}"]
        if description.get("FailureReason"):
            lines.append(f"reason: {description['FailureReason']}")
        best = description.get("BestTrainingJob")
        if best:
            metric = best.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
            lines.append(
                f"best: {best['TrainingJobName']}\t{metric.get('MetricName', 'objective')} = "
                f"{metric.get('Value')}\t{best.get('TrainingJobStatus', '')}"
            )
            tuned = best.get("TunedHyperParameters") or {}
            values = {key: results.decode(value) for key, value in tuned.items()}
            lines.append(f"hyperparameters: {json.dumps(values, sort_keys=True)}")
            model = self.job.training_job_model(best["TrainingJobName"])
            if model:
                lines.append(f"model: {model}")
        return lines

    @property
    def exit_code(self) -> int:
        state = self.job.describe()["HyperParameterTuningJobStatus"]
        return 1 if state in (*ENDED, "Deleting", "DeleteFailed") else 0

    def logs(self, follow: bool) -> Iterator[str]:
        return self.trial(None, lambda line: None).logs(follow)

    def trial(self, wanted: str | None, say: Say) -> JobView:
        trial = self.job.training_job(wanted)
        say(f"{self.name}: logs of training job {trial.name}")
        return TrainingJobView(trial)
