"""An image_uri naming one of AWS's training images must be the strategy's framework (and the
version framework_version names); any other image_uri stays the user's to know."""

from __future__ import annotations

import subprocess
import sys

import pytest

import smdist
from smdist.catalog import images
from smdist.errors import SpecError
from smdist.spec.job import JobSpec

DLC = "763104351884.dkr.ecr.us-west-2.amazonaws.com"
PYTORCH_IMAGE = f"{DLC}/pytorch-training:2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker"
TENSORFLOW_IMAGE = f"{DLC}/tensorflow-training:2.21.0-gpu-py312-cu129-amzn2023-sagemaker"


def job(strategy: dict, **code) -> dict:
    return {
        "name": "job",
        "strategy": strategy,
        "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        "code": code,
    }


def refusal(data: dict):
    with pytest.raises(SpecError) as caught:
        smdist.plan(JobSpec.from_dict(data))
    (problem,) = [p for p in caught.value.problems if p.path == "code.image_uri"]
    return problem


def plans(data: dict) -> smdist.Plan:
    return smdist.plan(JobSpec.from_dict(data))


def test_mwms_with_a_pytorch_image_is_refused_naming_both_frameworks():
    problem = refusal(job({"kind": "mwms"}, image_uri=PYTORCH_IMAGE))
    assert problem.value == PYTORCH_IMAGE
    assert "PyTorch" in problem.message and "pytorch-training" in problem.message
    assert "mwms" in problem.message and "TensorFlow" in problem.message
    assert "tensorflow-training" in problem.valid


def test_pytorch_ddp_with_a_tensorflow_image_is_refused():
    problem = refusal(job({"kind": "pytorch_ddp"}, image_uri=TENSORFLOW_IMAGE))
    assert "TensorFlow" in problem.message and "PyTorch" in problem.message


def test_horovod_takes_the_image_of_its_framework():
    assert plans(job({"kind": "horovod", "framework": "tensorflow"}, image_uri=TENSORFLOW_IMAGE))
    refusal(job({"kind": "horovod", "framework": "pytorch"}, image_uri=TENSORFLOW_IMAGE))


def test_the_strategys_own_framework_image_is_accepted():
    assert plans(job({"kind": "mwms"}, image_uri=TENSORFLOW_IMAGE))
    assert plans(job({"kind": "pytorch_ddp"}, image_uri=PYTORCH_IMAGE))


def test_a_tag_and_framework_version_that_disagree_are_refused_naming_both():
    problem = refusal(
        job({"kind": "pytorch_ddp"}, image_uri=PYTORCH_IMAGE, framework_version="2.8")
    )
    assert "2.3.0" in problem.message and "2.8" in problem.message
    assert "2.3.0" in problem.valid


@pytest.mark.parametrize("version", ["2.3", "2.3.0"])
def test_a_tag_and_framework_version_that_agree_are_accepted(version):
    assert plans(job({"kind": "pytorch_ddp"}, image_uri=PYTORCH_IMAGE, framework_version=version))


@pytest.mark.parametrize(
    "uri",
    [
        "123456789012.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311",  # a copy
        f"{DLC}/huggingface-pytorch-training:2.3.0-transformers4.48.0-gpu-py311",
        "ghcr.io/me/pytorch-training:2.3.0",
    ],
)
def test_other_images_are_not_checked(uri):
    assert plans(job({"kind": "mwms"}, image_uri=uri))


SMP_REGISTRY = "658645717510.dkr.ecr.us-east-1.amazonaws.com"
CHINA_REGISTRY = "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn"
READ = [
    (PYTORCH_IMAGE, "pytorch-training", "2.3.0", "gpu", "12.1"),
    (f"{DLC}/pytorch:2.13.0-cu133-amzn2023-sagemaker", "pytorch-training", "2.13.0", "gpu", "13.3"),
    (f"{DLC}/pytorch:2.13-cpu-amzn2023-sagemaker", "pytorch-training", "2.13", "cpu", None),
    (f"{CHINA_REGISTRY}/tensorflow-training:2.14-gpu-py310", "tensorflow-training", "2.14", "gpu",
     None),
    (f"{SMP_REGISTRY}/smdistributed-modelparallel:2.5.1-gpu-py311-cu124",
     "smdistributed-modelparallel", "2.5.1", "gpu", "12.4"),
    (f"{DLC}/pytorch-training:latest", "pytorch-training", None, None, None),
]  # fmt: skip


@pytest.mark.parametrize(("uri", "family", "version", "processor", "cuda"), READ)
def test_a_dlc_uri_is_read_for_its_family_version_and_build(uri, family, version, processor, cuda):
    reference = images.dlc_reference(uri)
    assert (reference.family, reference.version, reference.processor, reference.cuda) == (
        family,
        version,
        processor,
        cuda,
    )


def test_validate_exits_2_for_mwms_with_a_pytorch_image(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "name: j\nstrategy: {kind: mwms}\ncluster: {instance_type: ml.g5.xlarge}\n"
        f"code: {{image_uri: {PYTORCH_IMAGE}}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "code.image_uri" in done.stderr and "pytorch-training" in done.stderr
    assert "TensorFlow" in done.stderr and "Traceback" not in done.stderr
