"""Submit hands over what the dry run shows: ``send(dry_run(plan))``, under either SDK line.

The request moto receives (captured from boto3 on its way to the server) is the dry-run
value's request, whole: CreateTrainingJob under SDK v3 (sent by boto3) and under SDK v2 (the
estimator call derived from the value builds it), CreateHyperParameterTuningJob for a tuning
job. The one change a send makes, a fresh name when the name is taken, is the value rendered
again for that name; a value holding a dry run's placeholders is never sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from conformance_cases import CASES, SMDDP, conformance_job, every_option_settings
from moto_server import s3_objects, unreachable_aws

from smdist.backends import sagemaker as backend
from smdist.backends.sagemaker import tuning, v2
from smdist.backends.sagemaker.dry_run_value import dry_run
from smdist.backends.sagemaker.v2.estimator_call import estimator_call
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .botocore_once import one_botocore_loader  # noqa: F401 - applies to this module
from .conftest import BUCKET, REGION, ROLE
from .tuning_cases import EXAMPLES, example, rich_job, tuning_variant

ACCOUNT = {"bucket": BUCKET, "role": ROLE, "region": REGION}


def job_spec(name: str, strategy: dict, code: dict, cluster: tuple[str, int], **more: Any):
    return conformance_job("send", BUCKET, name, strategy, code, cluster, **more)


def every_option(name: str = "options") -> JobSpec:
    """A job with every setting that reaches the request (network isolation included: under
    v2 the SDK adds the code channel itself, the derived call must leave it out)."""
    return job_spec(
        name, {"kind": "sddp"}, SMDDP, ("ml.p4d.24xlarge", 2), **every_option_settings(BUCKET)
    )


def send_and_capture(spec: JobSpec, boto_session, captured: list[dict]):
    shown = backend.dry_run(plan(spec), **ACCOUNT)
    job = backend.send(shown, boto_session)
    assert captured == [shown.request]  # the whole request, as the dry run shows it
    assert job.name == shown.job_name and job.source_uri == shown.source_uri
    return shown, job


# ---- training jobs: SDK v3 (boto3) and SDK v2 (the derived estimator call) ----------------
@pytest.mark.parametrize(("name", "strategy", "code", "cluster"), CASES)
def test_the_request_moto_receives_is_the_dry_run_value(
    name, strategy, code, cluster, boto_session, bucket, captured_requests
):
    send_and_capture(job_spec(name, strategy, code, cluster), boto_session, captured_requests)


def test_every_option_is_sent_as_the_dry_run_shows_it(boto_session, bucket, captured_requests):
    shown, _ = send_and_capture(every_option(), boto_session, captured_requests)
    assert shown.request["EnableNetworkIsolation"] is True


def test_send_uploads_the_code_the_value_names_and_nothing_of_its_own(
    sdk_line, boto_session, bucket, captured_requests
):
    shown, job = send_and_capture(job_spec("upload", *CASES[0].values[1:]), boto_session,
                                  captured_requests)  # fmt: skip
    objects = s3_objects(boto_session)
    assert shown.source_uri in objects and job.uploaded_bytes > 0
    others = [uri for uri in objects if uri != shown.source_uri]
    # v3's drivers go where the request's sm_drivers channel says; v2's SDK uploads nothing
    prefix = {"v2": None, "v3": getattr(job, "drivers_uri", None)}[sdk_line]
    assert all(prefix and uri.startswith(prefix + "/") for uri in others)
    again = backend.send(backend.dry_run(plan(job.plan.spec), **ACCOUNT), boto_session)
    assert again.uploaded_bytes == 0 and again.name != job.name


def refuse_name(boto_session, operation: str, key: str, name: str) -> None:
    """SageMaker's answer to a name in use, for ``name`` (moto takes any name twice)."""
    from botocore.exceptions import ClientError

    def refuse(params: dict, **_: Any) -> None:
        if params.get(key) == name:
            error = {"Code": "ResourceInUse", "Message": f"{name} already exists"}
            raise ClientError({"Error": error}, operation)

    boto_session.events.register(f"before-parameter-build.sagemaker.{operation}", refuse)


def test_a_taken_name_is_sent_renamed_and_only_renamed(boto_session, bucket, captured_requests):
    shown = backend.dry_run(plan(job_spec("taken", *CASES[0].values[1:])), **ACCOUNT)
    refuse_name(boto_session, "CreateTrainingJob", "TrainingJobName", shown.job_name)
    job = backend.send(shown, boto_session)
    refused, renamed = captured_requests
    assert refused == shown.request  # sent as it is, refused by name
    assert job.name == renamed["TrainingJobName"] != shown.job_name
    assert renamed == shown.renamed(job.name).request  # the same function, another name
    changed = {key for key in renamed if renamed[key] != shown.request[key]}
    assert changed <= {"TrainingJobName", "HyperParameters"}
    before, after = shown.request["HyperParameters"], renamed["HyperParameters"]
    assert {key for key in after if after[key] != before[key]} <= {
        "sagemaker_job_name",
        "model_dir",
    }


def test_launch_is_send_of_the_dry_run(boto_session, bucket, captured_requests):
    job_plan = plan(every_option("launch"))
    job = backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    shown = backend.dry_run(job_plan, **ACCOUNT, job_name=job.name)
    assert captured_requests == [shown.request]


def test_a_dry_run_with_placeholders_is_never_sent(tmp_path, monkeypatch):
    unreachable_aws(monkeypatch, tmp_path)  # any AWS call would fail the test
    monkeypatch.delenv("SMDIST_BUCKET", raising=False)
    monkeypatch.delenv("SMDIST_ROLE", raising=False)
    shown = backend.dry_run(plan(job_spec("placeholders", *CASES[0].values[1:])))
    assert set(shown.placeholders) >= {"role", "bucket"}
    assert shown.request["RoleArn"] == "<role>"
    with pytest.raises(SpecError) as refused:
        backend.send(shown)
    message = str(refused.value)
    assert "role" in message and "bucket" in message and "placeholder" in message


def test_the_v2_estimator_call_is_read_from_the_value():
    # v2's route renders with no SDK call: proved under either line, though only v2 sends it
    shown = dry_run(plan(every_option("call")), v2.ROUTE, **ACCOUNT)
    call = estimator_call(shown)
    assert call.job_name == shown.request["TrainingJobName"]
    assert call.arguments["image_uri"] == shown.request["AlgorithmSpecification"]["TrainingImage"]
    assert call.arguments["source_dir"] == shown.source_uri
    assert call.inputs == {
        "train": {
            "s3_data": f"s3://{BUCKET}/data/train",
            "distribution": "FullyReplicated",
            "s3_data_type": "S3Prefix",
        },
        "val": {
            "s3_data": f"s3://{BUCKET}/data/val",
            "distribution": "ShardedByS3Key",
            "s3_data_type": "S3Prefix",
            "input_mode": "FastFile",
        },
    }  # fmt: skip  (the code channel of network isolation: added by the SDK itself)


# ---- tuning jobs --------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXAMPLES)
def test_the_tuning_request_moto_receives_is_the_dry_run_value(
    name, boto_session, bucket, captured_tuning_requests
):
    shown = tuning.dry_run(plan(JobSpec.from_dict(tuning_variant(example(name)))), **ACCOUNT)
    job = tuning.send(shown, boto_session)
    assert captured_tuning_requests == [shown.request]
    assert job.name == shown.job_name and job.source_uri == shown.source_uri


def test_a_rich_tuning_job_is_sent_as_shown(boto_session, bucket, captured_tuning_requests):
    data = rich_job(tuning_variant(example("pytorch_ddp.yaml")), spot=True)
    job_plan = plan(JobSpec.from_dict(data))
    job = tuning.launch(job_plan, **ACCOUNT, boto_session=boto_session)
    (sent,) = captured_tuning_requests
    shown = tuning.dry_run(job_plan, **ACCOUNT)
    assert sent == shown.renamed(job.name).request  # launch: send(dry_run(plan))
