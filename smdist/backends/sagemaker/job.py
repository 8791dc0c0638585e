"""A SageMaker training job seen through the Job protocol: status, CloudWatch logs, stop.

Works for a job this process submitted and for one attached by name later (``smdist status``),
so it talks to AWS with plain boto3 clients and never needs the SDK.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from smdist.backends.base import JobError, JobStatus
from smdist.backends.log_lines import prefixed
from smdist.backends.sagemaker.options import DEFAULT_POLL_SECONDS
from smdist.errors import NO_SUCH_JOB, Problem, SpecError

if TYPE_CHECKING:
    from smdist.planning.plan import Plan
    from smdist.planning.submission import Submission

LOG_GROUP = "/aws/sagemaker/TrainingJobs"


class CloudWatchLogReader:
    """New lines of a job's log streams (one per host: ``<job>/algo-1-<epoch>``) per call."""

    def __init__(self, logs_client: Any, job_name: str) -> None:
        self._client = logs_client
        self._job_name = job_name
        self._tokens: dict[str, str | None] = {}
        self._width = 0  # the longest host name seen: labels padded to it line up

    def _streams(self) -> list[str]:
        names: list[str] = []
        kwargs: dict[str, Any] = {
            "logGroupName": LOG_GROUP,
            "logStreamNamePrefix": f"{self._job_name}/",
        }
        while True:
            try:
                page = self._client.describe_log_streams(**kwargs)
            except self._client.exceptions.ResourceNotFoundException:
                return []  # no job in this account has logged yet
            names += [stream["logStreamName"] for stream in page.get("logStreams", [])]
            if not page.get("nextToken"):
                return sorted(names)
            kwargs["nextToken"] = page["nextToken"]

    def _events(self, stream: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        while True:
            kwargs: dict[str, Any] = {
                "logGroupName": LOG_GROUP,
                "logStreamName": stream,
                "startFromHead": True,
            }
            token = self._tokens.get(stream)
            if token:
                kwargs["nextToken"] = token
            page = self._client.get_log_events(**kwargs)
            batch = page.get("events", [])
            next_token = page.get("nextForwardToken")
            if next_token:
                self._tokens[stream] = next_token
            if not batch or next_token == token:
                return events + batch
            events += batch

    def new_lines(self) -> list[str]:
        """Lines logged since the last call, ordered by time, each prefixed with its host as
        the local backend prefixes them (``algo-1 | text``)."""
        collected: list[tuple[int, int, str, str]] = []
        for order, stream in enumerate(self._streams()):
            host = _host_of(stream, self._job_name)
            self._width = max(self._width, len(host))
            for event in self._events(stream):
                message = event.get("message", "").rstrip("\n")
                collected.append((event.get("timestamp", 0), order, host, message))
        collected.sort(key=lambda item: (item[0], item[1]))
        return [prefixed(host, message, self._width) for _, _, host, message in collected]


def _host_of(stream: str, job_name: str) -> str:
    # "<job>/algo-1-1700000000" -> "algo-1"
    tail = stream[len(job_name) + 1 :]
    host, sep, suffix = tail.rpartition("-")
    return host if sep and suffix.isdigit() else tail


NOT_FOUND = ("ValidationException", "ResourceNotFound")  # what Describe* says of no such job


def is_not_found(exc: Any) -> bool:
    """Whether a botocore ClientError from a Describe* call says there is no such job."""
    return exc.response.get("Error", {}).get("Code") in NOT_FOUND


class RemoteJob:
    """What a training job and a tuning job on SageMaker share: their name and region, the
    plan and Submission they were created from, the code upload, and the polling rules."""

    backend = "sagemaker"

    def __init__(
        self,
        name: str,
        boto_session: Any,
        *,
        plan: Plan | None = None,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        submission: Submission | None = None,
        source_uri: str | None = None,
        uploaded_bytes: int | None = None,
    ) -> None:
        self.name = name
        self.plan = plan
        self.submission = submission  # the bound values this job was created with
        self.poll_seconds = poll_seconds
        self.source_uri = source_uri
        self.uploaded_bytes = uploaded_bytes  # the code's; 0 when it was already there
        self.region = boto_session.region_name
        self._boto = boto_session
        self._sagemaker = boto_session.client("sagemaker")

    @property
    def status(self) -> JobStatus:
        raise NotImplementedError

    def _sleep(self, deadline: float | None) -> float:
        if deadline is None:
            return self.poll_seconds
        return max(0.0, min(self.poll_seconds, deadline - time.monotonic()))

    def _stop_unless_ended(self, stop_call: Callable[[], Any]) -> None:
        """Send a Stop* call; stopping a job that already ended is not an error for the caller."""
        from botocore.exceptions import ClientError

        try:
            stop_call()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ValidationException":
                raise
            if not self.status.finished:
                raise


class SageMakerJob(RemoteJob):
    """A training job on SageMaker (``backend="sagemaker"``); ``common`` takes ``RemoteJob``'s
    keywords."""

    def __init__(
        self,
        name: str,
        boto_session: Any,
        *,
        drivers_uri: str | None = None,
        drivers_uploaded_bytes: int | None = None,
        **common: Any,
    ) -> None:
        super().__init__(name, boto_session, **common)
        self.drivers_uri = drivers_uri  # SDK v3's sm_drivers channel
        self.drivers_uploaded_bytes = drivers_uploaded_bytes
        self._logs = boto_session.client("logs")
        self._reader = CloudWatchLogReader(self._logs, name)

    def __repr__(self) -> str:
        return f"SageMakerJob({self.name!r}, region={self.region!r})"

    # ---- state -------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """DescribeTrainingJob, as AWS returns it."""
        return self._sagemaker.describe_training_job(TrainingJobName=self.name)

    @property
    def status(self) -> JobStatus:
        return JobStatus(self.describe()["TrainingJobStatus"])

    @property
    def secondary_status(self) -> str | None:
        return self.describe().get("SecondaryStatus")

    @property
    def model_artifacts(self) -> str | None:
        description = self.describe()
        if description["TrainingJobStatus"] != JobStatus.COMPLETED.value:
            return None
        return (description.get("ModelArtifacts") or {}).get("S3ModelArtifacts")

    @property
    def failure_reason(self) -> str | None:
        return self.describe().get("FailureReason")

    # ---- logs and waiting --------------------------------------------------------------------
    def logs(self, follow: bool = False) -> Iterator[str]:
        """CloudWatch log lines so far; with ``follow``, keep polling until the job ends."""
        return self._follow(None) if follow else iter(self._reader.new_lines())

    def _follow(self, deadline: float | None) -> Iterator[str]:
        while True:
            # Read the status first: lines logged before the job ended are all read below.
            finished = self.status.finished
            yield from self._reader.new_lines()
            if finished or (deadline is not None and time.monotonic() >= deadline):
                return
            time.sleep(self._sleep(deadline))

    def wait(
        self,
        timeout: float | None = None,
        logs: bool = False,
        raise_on_failure: bool = False,
        echo: Callable[[str], None] | None = None,
    ) -> JobStatus:
        """Poll until the job ends or ``timeout`` seconds pass; with ``logs``, print its lines."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if logs:
            write = echo or (lambda line: print(line, file=sys.stdout, flush=True))
            for line in self._follow(deadline):
                write(line)
            status = self.status
        else:
            while True:
                status = self.status
                if status.finished or (deadline is not None and time.monotonic() >= deadline):
                    break
                time.sleep(self._sleep(deadline))
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self.failure_reason)
        return status

    def stop(self) -> None:
        """StopTrainingJob: SageMaker sends SIGTERM, then SIGKILL after 120 seconds."""
        self._stop_unless_ended(
            lambda: self._sagemaker.stop_training_job(TrainingJobName=self.name)
        )


def attach(
    name: str, boto_session: Any, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> SageMakerJob:
    """The job called ``name`` in the session's region; SpecError when there is none."""
    from botocore.exceptions import ClientError

    job = SageMakerJob(name, boto_session, poll_seconds=poll_seconds)
    try:
        job.describe()
    except ClientError as exc:
        if is_not_found(exc):
            raise SpecError(
                [
                    Problem(
                        "job",
                        f"no SageMaker training job with this name in {job.region}",
                        name,
                        "a name from `aws sagemaker list-training-jobs`",
                    )
                ],
                NO_SUCH_JOB,
            ) from None
        raise
    return job
