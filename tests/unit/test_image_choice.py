"""smdist names the training image from its own dated catalogue: registry per region, tag per
image and processor, the newest image when no version is set, and a warning past support."""

from __future__ import annotations

import pytest

from smdist.catalog import images
from smdist.checks.images import training_image_uri
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

# Published tags of images newer than either SDK's tables: aws/deep-learning-containers
# docs/src/data/{pytorch,pytorch-training}/*-sagemaker.yml (read 2026-11-24), in us-west-2.
PUBLISHED = {
    ("pytorch-training", "2.13", "gpu"): "pytorch:2.13.0-cu133-amzn2023-sagemaker",
    ("pytorch-training", "2.13", "cpu"): "pytorch:2.13.0-cpu-amzn2023-sagemaker",
    ("pytorch-training", "2.12", "gpu"): "pytorch:2.12.1-cu130-amzn2023-sagemaker",
    ("pytorch-training", "2.11", "cpu"): "pytorch:2.11.0-cpu-amzn2023-sagemaker",
    ("pytorch-training", "2.10", "gpu"): "pytorch-training:2.10.0-gpu-py313",
    ("pytorch-training", "2.9", "cpu"): "pytorch-training:2.9.0-cpu-py312",
    # TensorFlow 2.21: docs/src/data/tensorflow-training/2.21-*-sagemaker.yml
    ("tensorflow-training", "2.21", "gpu"): "tensorflow-training:"
    "2.21.0-gpu-py312-cu129-amzn2023-sagemaker",
    ("tensorflow-training", "2.21", "cpu"): "tensorflow-training:"
    "2.21.0-cpu-py312-amzn2023-sagemaker",
}


def spec(version: str | None = None, kind: str = "pytorch_ddp", instance="ml.p4d.24xlarge", **code):
    if version is not None:
        code["framework_version"] = version
    return JobSpec.from_dict(
        {
            "name": "img",
            "strategy": {"kind": kind},
            "cluster": {"instance_type": instance, "instance_count": 2},
            "code": code,
        }
    )


@pytest.mark.parametrize(("key", "tail"), PUBLISHED.items(), ids=lambda v: str(v))
def test_images_newer_than_the_sdks_tables_carry_their_published_tags(key, tail):
    family, version, processor = key
    kind = "pytorch_ddp" if family.startswith("pytorch") else "mwms"
    job = spec(version, kind, "ml.p4d.24xlarge" if processor == "gpu" else "ml.c5.xlarge")
    assert (
        training_image_uri(job, "us-west-2")
        == f"763104351884.dkr.ecr.us-west-2.amazonaws.com/{tail}"
    )


@pytest.mark.parametrize(
    ("region", "host"),
    [
        ("us-west-2", "763104351884.dkr.ecr.us-west-2.amazonaws.com"),
        ("af-south-1", "626614931356.dkr.ecr.af-south-1.amazonaws.com"),
        ("cn-northwest-1", "727897471807.dkr.ecr.cn-northwest-1.amazonaws.com.cn"),
    ],
)
def test_each_region_has_its_registry(region, host):
    assert training_image_uri(spec("2.13"), region).startswith(host + "/pytorch:")


def test_smp_images_come_from_their_own_account_in_their_regions_only():
    smp = JobSpec.from_dict(
        {
            "name": "img",
            "strategy": {"kind": "sdmp", "version": 2},
            "cluster": {"instance_type": "ml.p4d.24xlarge", "instance_count": 2},
            "code": {"framework_version": "2.4.1"},
        }
    )
    assert training_image_uri(smp, "us-east-1").startswith(
        "658645717510.dkr.ecr.us-east-1.amazonaws.com/smdistributed-modelparallel:2.4.1-gpu-py311"
    )
    with pytest.raises(SpecError) as raised:
        training_image_uri(smp, "af-south-1")
    assert raised.value.problems[0].path == "region"


def test_a_job_without_a_version_runs_the_newest_catalogued_image_and_says_so():
    job = plan(spec())
    assert training_image_uri(job.spec, "us-west-2").endswith(
        "/pytorch:2.13.0-cu133-amzn2023-sagemaker"
    )
    warning = next(w for w in job.warnings if w.path == "code.framework_version")
    assert "2.13.0 today" in warning.message and "SDK v2 and v3 alike" in warning.message


def test_an_image_past_its_support_is_a_warning_naming_the_newest_supported():
    warnings = [w for w in plan(spec("2.8.0")).warnings if w.path == "code.framework_version"]
    assert warnings and "past its support" in warnings[0].message
    assert (
        warnings[0].valid
        == f"the newest supported, {images.newest_supported('pytorch-training').version}"
    )
    assert not [w for w in plan(spec("2.13.0")).warnings if w.path == "code.framework_version"]


@pytest.mark.parametrize(
    ("kind", "version", "library", "newest"),
    [("horovod", "2.0.0", "horovod", "2.0.0"), ("sddp", "2.2.0", "smddp", "2.5.1")],
)
def test_past_support_where_no_supported_image_has_the_library_says_so_in_one_warning(
    kind, version, library, newest
):
    # Horovod and SMDDP left the images: the newest supported one (2.13) would not run the job.
    warnings = [w for w in plan(spec(version, kind)).warnings if w.path == "code.framework_version"]
    assert len(warnings) == 1
    assert f"no supported image carries {library} (the newest that does: {newest})" in str(
        warnings[0]
    )
    assert warnings[0].valid == f"{newest}, or code.image_uri: an image of your own with {library}"
    assert "\n" not in str(warnings[0])


def test_trainium_has_no_catalogued_image_and_asks_for_one():
    with pytest.raises(SpecError) as raised:
        training_image_uri(spec("2.13", instance="ml.trn1.32xlarge"), "us-west-2")
    assert raised.value.problems[0].path == "code.image_uri"
