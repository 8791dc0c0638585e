"""moto's server, plus the training-job lifecycle moto leaves out.

moto creates every training job already ``Completed`` and has no StopTrainingJob, so on plain
moto a job can never run, fail or be stopped. This starts the same ``moto_server`` with two
additions, driven by the job's own tags (sent in its real CreateTrainingJob request):

- ``smdist-test:polls-in-progress`` = N: the job answers ``InProgress`` to N
  DescribeTrainingJob calls, then ends with ``smdist-test:outcome`` (``Completed`` by default,
  or ``Failed`` with ``smdist-test:failure-reason``).
- StopTrainingJob: an ``InProgress`` job becomes ``Stopping``, then ``Stopped`` on the next
  describe; stopping a job that has ended is a ValidationException, as on AWS.

Without those tags a job behaves exactly as in plain moto. Usage:
``python moto_lifecycle.py -H 127.0.0.1 -p PORT`` (the arguments of ``moto_server``).
"""

from __future__ import annotations

import sys
from typing import Any

from moto import server
from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker import models, responses
from moto.sagemaker.exceptions import ValidationError

POLLS_TAG = "smdist-test:polls-in-progress"
OUTCOME_TAG = "smdist-test:outcome"
REASON_TAG = "smdist-test:failure-reason"

# job name -> {"polls": remaining InProgress answers, "outcome": ..., "reason": ...}
_lifecycle: dict[str, dict[str, Any]] = {}

_create = models.SageMakerModelBackend.create_training_job
_describe = models.SageMakerModelBackend.describe_training_job


def _finish(job: Any, outcome: str, reason: str | None) -> None:
    job.training_job_status = outcome
    job.secondary_status = outcome
    if reason:
        job.failure_reason = reason


def create_training_job(self: Any, *args: Any, **kwargs: Any) -> Any:
    job = _create(self, *args, **kwargs)
    tags = {tag["Key"]: tag["Value"] for tag in (job.tags or [])}
    polls = int(tags.get(POLLS_TAG, "0"))
    outcome = tags.get(OUTCOME_TAG, "Completed")
    reason = tags.get(REASON_TAG)
    if polls > 0:
        job.training_job_status = "InProgress"
        job.secondary_status = "Training"
        _lifecycle[job.training_job_name] = {"polls": polls, "outcome": outcome, "reason": reason}
    else:
        _finish(job, outcome, reason)
    return job


def describe_training_job(self: Any, training_job_name: str) -> dict[str, Any]:
    state = _lifecycle.get(training_job_name)
    job = self.training_jobs.get(training_job_name)
    if state is not None and job is not None:
        if job.training_job_status == "Stopping":
            _finish(job, "Stopped", None)
            _lifecycle.pop(training_job_name)
        elif state["polls"] <= 0:
            _finish(job, state["outcome"], state["reason"])
            _lifecycle.pop(training_job_name)
        else:
            state["polls"] -= 1
    return _describe(self, training_job_name)


def stop_training_job(self: Any, training_job_name: str) -> None:
    job = self.training_jobs.get(training_job_name)
    if job is None:
        raise ValidationError(message=f"Could not find training job '{training_job_name}'.")
    if job.training_job_status != "InProgress":
        raise ValidationError(
            message=f"The request was rejected because the training job is in status "
            f"{job.training_job_status}."
        )
    job.training_job_status = "Stopping"
    job.secondary_status = "Stopping"


def stop_training_job_response(self: Any) -> ActionResult:
    self.sagemaker_backend.stop_training_job(self._get_param("TrainingJobName"))
    return EmptyResult()


models.SageMakerModelBackend.create_training_job = create_training_job
models.SageMakerModelBackend.describe_training_job = describe_training_job
models.SageMakerModelBackend.stop_training_job = stop_training_job
responses.SageMakerResponse.stop_training_job = stop_training_job_response

if __name__ == "__main__":
    server.main(sys.argv[1:])
