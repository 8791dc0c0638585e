"""A SageMaker job through the Job protocol: status, CloudWatch logs, wait, stop, artifacts,
failure reason — for the job fit() returns and for one attached by name later."""

from __future__ import annotations

import threading
import time

import pytest

import smdist
from smdist.backends import sagemaker as backend
from smdist.backends.base import Job, JobError, JobStatus
from smdist.backends.sagemaker.job import LOG_GROUP
from smdist.errors import SpecError

from .conftest import BUCKET, REGION, ROLE

POLLS = "smdist-test:polls-in-progress"
OUTCOME = "smdist-test:outcome"
REASON = "smdist-test:failure-reason"
OPTIONS = {"bucket": BUCKET, "poll_seconds": 0.05}
NOW_MS = int(time.time() * 1000)  # CloudWatch drops events older than 14 days


def spec(**tags: str) -> dict:
    return {
        "name": "lifecycle",
        "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "code": {"framework_version": "2.3.0", "py_version": "py311"},
        "role": ROLE,
        "region": REGION,
        "tags": tags,
    }


def start(boto_session, **tags: str):
    return smdist.fit(
        **spec(**tags),
        backend="sagemaker",
        wait=False,
        options={**OPTIONS, "boto_session": boto_session},
    )


def put_logs(boto_session, job_name: str, host: str, lines: list[str], start_ms: int) -> None:
    logs = boto_session.client("logs")
    try:
        logs.create_log_group(logGroupName=LOG_GROUP)
    except logs.exceptions.ResourceAlreadyExistsException:
        pass
    stream = f"{job_name}/{host}-1700000000"
    try:
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
    except logs.exceptions.ResourceAlreadyExistsException:
        pass
    logs.put_log_events(
        logGroupName=LOG_GROUP,
        logStreamName=stream,
        logEvents=[
            {"timestamp": NOW_MS + start_ms + i * 10, "message": line}
            for i, line in enumerate(lines)
        ],
    )


def test_fit_waits_for_completion_and_reports_the_model(boto_session):
    job = smdist.fit(
        **spec(), backend="sagemaker", logs=False, options={**OPTIONS, "boto_session": boto_session}
    )
    assert isinstance(job, Job)
    assert job.backend == "sagemaker"
    assert job.status is JobStatus.COMPLETED
    assert job.model_artifacts == f"s3://{BUCKET}/{job.name}/output/model.tar.gz"
    assert job.failure_reason is None
    assert job.submission is not None and job.submission.job_name == job.name
    assert job.submission.plan is job.plan


def test_a_running_job_is_in_progress_until_it_ends(boto_session):
    job = start(boto_session, **{POLLS: "3"})
    assert job.status is JobStatus.IN_PROGRESS
    assert job.model_artifacts is None
    assert job.wait() is JobStatus.COMPLETED


def test_wait_gives_up_after_the_timeout(boto_session):
    job = start(boto_session, **{POLLS: "100000"})
    assert job.wait(timeout=0.3) is JobStatus.IN_PROGRESS


def test_failed_job_reports_its_reason(boto_session):
    job = start(
        boto_session, **{POLLS: "2", OUTCOME: "Failed", REASON: "AlgorithmError: rank 1 OOM"}
    )
    assert job.wait() is JobStatus.FAILED
    assert job.failure_reason == "AlgorithmError: rank 1 OOM"
    assert job.model_artifacts is None
    with pytest.raises(JobError, match="rank 1 OOM"):
        job.wait(raise_on_failure=True)


def test_stop_stops_a_running_job(boto_session):
    job = start(boto_session, **{POLLS: "100000"})
    job.stop()
    assert job.status in (JobStatus.STOPPING, JobStatus.STOPPED)
    assert job.wait() is JobStatus.STOPPED
    job.stop()  # stopping an ended job is not an error
    with pytest.raises(JobError):
        job.wait(raise_on_failure=True)


def test_logs_interleave_hosts_in_time_order(boto_session):
    job = start(boto_session)
    put_logs(boto_session, job.name, "algo-2", ["b1", "b2"], start_ms=5)
    put_logs(boto_session, job.name, "algo-1", ["a1", "a2"], start_ms=0)
    assert list(job.logs()) == ["algo-1 | a1", "algo-2 | b1", "algo-1 | a2", "algo-2 | b2"]
    assert list(job.logs()) == []  # only new lines on the next call
    put_logs(boto_session, job.name, "algo-1", ["a3"], start_ms=100)
    assert list(job.logs()) == ["algo-1 | a3"]


def test_wait_streams_lines_written_while_the_job_runs(boto_session):
    job = start(boto_session, **{POLLS: "40"})
    put_logs(boto_session, job.name, "algo-1", ["starting"], start_ms=0)

    def training() -> None:  # the container logging while the job is in progress
        for step in range(3):
            time.sleep(0.1)
            put_logs(boto_session, job.name, "algo-1", [f"[metrics] step={step}"], 100 + step)

    writer = threading.Thread(target=training)
    writer.start()
    seen: list[str] = []
    status = job.wait(logs=True, echo=seen.append)
    writer.join()
    assert status is JobStatus.COMPLETED
    assert seen == ["algo-1 | starting"] + [f"algo-1 | [metrics] step={s}" for s in range(3)]


def test_no_logs_yet_is_no_lines(boto_session):
    assert list(start(boto_session).logs()) == []


def test_attach_by_name_sees_the_same_job(boto_session):
    submitted = start(boto_session, **{POLLS: "1", OUTCOME: "Failed", REASON: "bad data"})
    attached = backend.attach_job(submitted.name, boto_session=boto_session, poll_seconds=0.05)
    assert attached.plan is None
    assert attached.wait() is JobStatus.FAILED
    assert attached.failure_reason == "bad data"


def test_attach_to_an_unknown_job_is_a_spec_error(boto_session):
    with pytest.raises(SpecError, match="no SageMaker training job"):
        backend.attach_job("no-such-job", boto_session=boto_session)


def test_missing_role_is_reported_before_any_upload(boto_session, aws):
    data = spec()
    data.pop("role")
    with pytest.raises(SpecError, match="no IAM role"):
        smdist.fit(**data, backend="sagemaker", options={**OPTIONS, "boto_session": boto_session})
    assert aws.object_writes(BUCKET, "") == []


def test_local_inputs_are_refused_for_sagemaker(boto_session, tmp_path):
    data = spec()
    data["inputs"] = {"train": f"file://{tmp_path}"}
    with pytest.raises(SpecError, match="inputs.train.uri"):
        smdist.fit(**data, backend="sagemaker", options={**OPTIONS, "boto_session": boto_session})
