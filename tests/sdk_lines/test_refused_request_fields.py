"""A request field SageMaker refuses for an instance type is never sent, under either SDK line
and in tuning jobs: ``VolumeSizeInGB`` on g7e, p6-b200 and trn2 (the catalogue's
``refused_request_fields``). Elsewhere the request keeps the SDKs' default volume size.

The request moto receives is captured from boto3 on its way out: under SDK v3 smdist's own
CreateTrainingJob, under SDK v2 the one the estimator builds from the derived call.
"""

from __future__ import annotations

import pytest
from conformance_cases import conformance_job

from smdist import catalog
from smdist.backends import sagemaker as backend
from smdist.backends.sagemaker import tuning
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE
from .tuning_cases import tuning_variant

ACCOUNT = {"bucket": BUCKET, "role": ROLE, "region": REGION}
PYTORCH = {"framework_version": "2.13.0", "py_version": "py312"}
NEURON = {"image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-neuron-training:1"}
# An instance type of each family whose ResourceConfig SageMaker refuses VolumeSizeInGB in.
REFUSING = {
    "ml.g7e.12xlarge": ({"kind": "pytorch_ddp", "launcher": "torchrun"}, PYTORCH),
    "ml.p6-b200.48xlarge": ({"kind": "pytorch_ddp", "launcher": "torchrun"}, PYTORCH),
    "ml.trn2.48xlarge": ({"kind": "pytorch_ddp", "launcher": "torch_distributed"}, NEURON),
}


def job_data(instance_type: str, strategy: dict, code: dict) -> dict:
    name = "volume-" + instance_type.split(".")[1]
    spec = conformance_job("refused", BUCKET, name, strategy, code, (instance_type, 2))
    return spec.model_dump(by_alias=True, exclude_none=True)


def sent_training_request(data: dict, boto_session, captured: list[dict]) -> dict:
    shown = backend.dry_run(plan(JobSpec.from_dict(data)), **ACCOUNT)
    backend.send(shown, boto_session)
    assert captured == [shown.request]  # what is sent is what the dry run shows
    return captured[0]


def test_the_catalogue_names_the_refusing_families():
    refusing = {
        info.family
        for info in map(catalog.instance, catalog.known_instance_types())
        if "VolumeSizeInGB" in info.refused_request_fields
    }
    assert refusing == {"g7e", "p6-b200", "trn2"}


@pytest.mark.parametrize("instance_type", sorted(REFUSING))
def test_volume_size_is_not_sent_where_sagemaker_refuses_it(
    instance_type, boto_session, bucket, captured_requests
):
    data = job_data(instance_type, *REFUSING[instance_type])
    resources = sent_training_request(data, boto_session, captured_requests)["ResourceConfig"]
    assert "VolumeSizeInGB" not in resources
    assert (resources["InstanceType"], resources["InstanceCount"]) == (instance_type, 2)


def test_volume_size_is_sent_everywhere_else(boto_session, bucket, captured_requests):
    data = job_data("ml.g5.12xlarge", *REFUSING["ml.g7e.12xlarge"])
    resources = sent_training_request(data, boto_session, captured_requests)["ResourceConfig"]
    assert resources["VolumeSizeInGB"] == 30


@pytest.mark.parametrize("instance_type", sorted(REFUSING))
def test_tuning_trials_leave_it_out_too(
    instance_type, boto_session, bucket, captured_tuning_requests
):
    data = tuning_variant(job_data(instance_type, *REFUSING[instance_type]))
    shown = tuning.dry_run(plan(JobSpec.from_dict(data)), **ACCOUNT)
    tuning.send(shown, boto_session)
    assert captured_tuning_requests == [shown.request]
    resources = captured_tuning_requests[0]["TrainingJobDefinition"]["ResourceConfig"]
    assert "VolumeSizeInGB" not in resources and resources["InstanceType"] == instance_type
