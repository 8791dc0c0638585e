"""A SageMaker hyperparameter tuning job: its status, progress, trials and best training job.

Works for a search this process launched and for one attached by name later (``smdist status
NAME``), with plain boto3 clients and no SDK. Statuses and exit codes follow the training
jobs' rule (``JobStatus``): Completed 0, Failed and Stopped 1; ``Deleting`` and
``DeleteFailed``, which only a tuning job has, count as Stopped (the search is over and gave
no complete answer).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from smdist.backends.base import JobError, JobStatus
from smdist.backends.sagemaker.job import (
    DEFAULT_POLL_SECONDS,
    RemoteJob,
    SageMakerJob,
    is_not_found,
)
from smdist.backends.sagemaker.tuning import results
from smdist.backends.tuning_results import Trial, TuningResult
from smdist.errors import NO_SUCH_JOB, Problem, SpecError

_STATUS = {status.value: status for status in JobStatus}
_STATUS.update({"Deleting": JobStatus.STOPPED, "DeleteFailed": JobStatus.STOPPED})


class TuningJob(RemoteJob):
    """A tuning job on SageMaker (``smdist tune``, ``smdist.tune(backend="sagemaker")``); its
    ``submission`` holds the bound values the trials were defined with."""

    def __repr__(self) -> str:
        return f"TuningJob({self.name!r}, region={self.region!r})"

    # ---- state -------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """DescribeHyperParameterTuningJob, as AWS returns it."""
        return self._sagemaker.describe_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=self.name
        )

    @property
    def status(self) -> JobStatus:
        return _STATUS[self.describe()["HyperParameterTuningJobStatus"]]

    @property
    def failure_reason(self) -> str | None:
        return self.describe().get("FailureReason") or None

    @property
    def best_training_job(self) -> dict[str, Any] | None:
        """The best trial so far as SageMaker reports it (``BestTrainingJob``), or None."""
        return self.describe().get("BestTrainingJob")

    @property
    def best(self) -> Trial | None:
        """The best trial so far, with its model once it has one."""
        return self._best(self.describe())

    def _best(self, description: dict[str, Any]) -> Trial | None:
        summary = description.get("BestTrainingJob")
        if not summary:
            return None
        number = results.trial_number(self.name, summary["TrainingJobName"])
        model = self.training_job_model(summary["TrainingJobName"])
        return results.trial(summary, -1 if number is None else number, model)

    @property
    def model_artifacts(self) -> str | None:
        """The best trial's model (what ``smdist`` prints when the search ends)."""
        best = self.best
        return best.model if best else None

    def training_job_model(self, training_job: str) -> str | None:
        """A trial's model artifacts (DescribeTrainingJob), None until it has completed."""
        from botocore.exceptions import ClientError

        try:
            description = self._sagemaker.describe_training_job(TrainingJobName=training_job)
        except ClientError as exc:
            if is_not_found(exc):
                return None
            raise
        if description.get("TrainingJobStatus") != JobStatus.COMPLETED.value:
            return None
        return (description.get("ModelArtifacts") or {}).get("S3ModelArtifacts")

    # ---- trials ------------------------------------------------------------------------------
    def training_jobs(self) -> list[dict[str, Any]]:
        """Every trial's summary (ListTrainingJobsForHyperParameterTuningJob, all pages)."""
        summaries: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"HyperParameterTuningJobName": self.name, "MaxResults": 100}
        while True:
            page = self._sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(**kwargs)
            summaries += page.get("TrainingJobSummaries", [])
            if not page.get("NextToken"):
                return summaries
            kwargs["NextToken"] = page["NextToken"]

    def result(self) -> TuningResult:
        """The search as it stands: every trial, its tuned values, objective, status, model."""
        description = self.describe()
        summaries = self.training_jobs()
        models = {
            s["TrainingJobName"]: self.training_job_model(s["TrainingJobName"])
            for s in summaries
            if s.get("TrainingJobStatus") == JobStatus.COMPLETED.value
        }
        return results.tuning_result(description, summaries, models)

    @property
    def trials(self) -> list[Trial]:
        return self.result().trials

    def dataframe(self) -> Any:
        return self.result().dataframe()

    def plot(self, ax: Any = None) -> Any:
        return self.result().plot(ax)

    # ---- waiting, logs, stopping -------------------------------------------------------------
    def progress_line(self, description: dict[str, Any]) -> str:
        """One line of progress: status, trial counts, best objective so far."""
        line = f"{self.name}: {description['HyperParameterTuningJobStatus']}; "
        line += results.counts_line(description)
        best = description.get("BestTrainingJob")
        if best and results.objective_value(best) is not None:
            line += f"; best {results.objective_value(best):g} ({best['TrainingJobName']})"
        return line

    def wait(
        self,
        timeout: float | None = None,
        logs: bool = False,
        raise_on_failure: bool = False,
        echo: Callable[[str], None] | None = None,
    ) -> JobStatus:
        """Poll until the search ends (or ``timeout`` seconds pass), printing a line whenever
        its progress changes (``echo``, default stdout); ``logs`` is accepted for the Job
        protocol: trials' logs are each training job's (``smdist logs NAME --job TRIAL``)."""
        write = echo or (lambda line: print(line, file=sys.stdout, flush=True))
        deadline = None if timeout is None else time.monotonic() + timeout
        shown = None
        while True:
            description = self.describe()
            line = self.progress_line(description)
            if line != shown:
                write(line)
                shown = line
            status = _STATUS[description["HyperParameterTuningJobStatus"]]
            if status.finished or (deadline is not None and time.monotonic() >= deadline):
                break
            time.sleep(self._sleep(deadline))
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, description.get("FailureReason"))
        return status

    def training_job(self, name: str | None = None) -> SageMakerJob:
        """One trial as a training job (its logs, status, model): ``name``, else the best."""
        if name is None:
            best = self.best_training_job
            if not best:
                raise SpecError(
                    [
                        Problem(
                            "job",
                            f"tuning job {self.name} has no best training job yet",
                            self.name,
                            "name a trial with --job (its trials: smdist status NAME)",
                        )
                    ],
                    NO_SUCH_JOB,
                )
            name = best["TrainingJobName"]
        return SageMakerJob(name, self._boto, poll_seconds=self.poll_seconds)

    def logs(self, follow: bool = False) -> Iterator[str]:
        """The best trial's log lines (CloudWatch)."""
        return self.training_job().logs(follow=follow)

    def stop(self) -> None:
        """StopHyperParameterTuningJob: SageMaker stops every running trial."""
        self._stop_unless_ended(
            lambda: self._sagemaker.stop_hyper_parameter_tuning_job(
                HyperParameterTuningJobName=self.name
            )
        )


def find(name: str, boto_session: Any, poll_seconds: float = DEFAULT_POLL_SECONDS):
    """The tuning job called ``name`` in the session's region, or None when there is none."""
    from botocore.exceptions import ClientError

    job = TuningJob(name, boto_session, poll_seconds=poll_seconds)
    try:
        job.describe()
    except ClientError as exc:
        if is_not_found(exc):
            return None
        raise
    return job


def attach(name: str, boto_session: Any, poll_seconds: float = DEFAULT_POLL_SECONDS) -> TuningJob:
    """The tuning job called ``name``; SpecError when there is none."""
    job = find(name, boto_session, poll_seconds)
    if job is None:
        raise SpecError(
            [
                Problem(
                    "job",
                    f"no SageMaker tuning job with this name in {boto_session.region_name}",
                    name,
                    "a name from `aws sagemaker list-hyper-parameter-tuning-jobs`",
                )
            ],
            NO_SUCH_JOB,
        )
    return job
