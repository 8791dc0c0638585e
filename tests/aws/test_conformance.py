"""The dry run is what runs: for every strategy, launcher and SMP version on several clusters,
the CreateTrainingJob request the SageMaker SDK actually sends (captured from boto3 on its way
to the moto server) equals the request ``smdist submit --dry-run`` shows for the same job."""

from __future__ import annotations

import pytest
from conformance_cases import CASES, SMDDP, TF, conformance_job, every_option_settings

from smdist.backends import sagemaker as backend
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE

COMPARED = (
    "HyperParameters",
    "ResourceConfig",
    "AlgorithmSpecification",
    "StoppingCondition",
    "CheckpointConfig",
    "VpcConfig",
    "EnableManagedSpotTraining",
)


def submit_and_compare(spec: JobSpec, boto_session, captured: list[dict]) -> dict:
    job_plan = plan(spec)
    job = backend.launch(job_plan, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    assert len(captured) == 1
    sent = captured[0]
    shown = backend.dry_run(job_plan, bucket=BUCKET, role=ROLE, region=REGION, job_name=job.name)
    for key in COMPARED:
        assert sent.get(key) == shown.request.get(key), key
    # Not only the fields above: the whole request is the same.
    assert sent == shown.request
    assert shown.source_uri == job.source_uri
    return sent


@pytest.mark.parametrize(("name", "strategy", "code", "cluster"), CASES)
def test_sdk_request_equals_dry_run(name, strategy, code, cluster, boto_session, captured_requests):
    spec = conformance_job("conf", BUCKET, name, strategy, code, cluster)
    sent = submit_and_compare(spec, boto_session, captured_requests)
    assert sent["ResourceConfig"]["InstanceCount"] == cluster[1]
    assert sent["HyperParameters"]["sagemaker_program"].strip('"').endswith(".py")


def test_every_job_option_reaches_the_request(boto_session, captured_requests):
    spec = conformance_job(
        "conf", BUCKET, "options", {"kind": "sddp"}, SMDDP, ("ml.p4d.24xlarge", 2),
        **every_option_settings(BUCKET),
        checkpoint={"s3_uri": f"s3://{BUCKET}/ckpt", "local_path": "/opt/ml/ckpt"},
        max_run=3600,
    )  # fmt: skip
    sent = submit_and_compare(spec, boto_session, captured_requests)
    assert sent["EnableManagedSpotTraining"] is True
    assert sent["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    assert sent["VpcConfig"]["Subnets"] == ["subnet-0123456789abcdef0"]
    # Network isolation: the code travels as the "code" channel, not through S3 at run time.
    assert sent["HyperParameters"]["sagemaker_submit_directory"] == (
        '"/opt/ml/input/data/code/sourcedir.tar.gz"'
    )
    assert sent["InputDataConfig"][-1]["ChannelName"] == "code"


def test_warm_pool_and_image_uri(boto_session, captured_requests):
    image = "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-training:2.4"
    spec = JobSpec.from_dict(
        {
            "name": "conf-warm",
            "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
            "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
            "code": {"image_uri": image},
            "keep_alive": 1800,
        }
    )
    sent = submit_and_compare(spec, boto_session, captured_requests)
    assert sent["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800
    assert sent["AlgorithmSpecification"]["TrainingImage"] == image


def test_tensorflow_model_dir_follows_output_path(boto_session, captured_requests):
    spec = JobSpec.from_dict(
        {
            "name": "conf-tf-out",
            "strategy": {"kind": "mwms"},
            "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
            "code": TF,
            "output_path": f"s3://{BUCKET}/tf-models/",
        }
    )
    sent = submit_and_compare(spec, boto_session, captured_requests)
    name = sent["TrainingJobName"]
    assert sent["HyperParameters"]["model_dir"] == f'"s3://{BUCKET}/tf-models/{name}/model"'
