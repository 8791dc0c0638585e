"""A GPU image runs only where its framework build has kernels for the instance's GPU.

The catalogue knows each GPU's compute capability and what each image's CUDA build carries; a
job whose image has no kernels for its GPU is refused, naming the instance, its GPU, the image's
version and CUDA build, and what would run.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import smdist
from smdist import catalog
from smdist.catalog import compute_capability, images
from smdist.errors import SpecError
from smdist.spec.job import JobSpec

DLC = "763104351884.dkr.ecr.us-west-2.amazonaws.com"
GPU_FAMILIES = {
    "p2": ("NVIDIA K80", "3.7"),
    "p3": ("NVIDIA V100", "7.0"),
    "p3dn": ("NVIDIA V100", "7.0"),
    "g4dn": ("NVIDIA T4", "7.5"),
    "p4d": ("NVIDIA A100", "8.0"),
    "p4de": ("NVIDIA A100", "8.0"),
    "g5": ("NVIDIA A10G", "8.6"),
    "g6": ("NVIDIA L4", "8.9"),
    "g6e": ("NVIDIA L40S", "8.9"),
    "p5": ("NVIDIA H100", "9.0"),
    "p5e": ("NVIDIA H200", "9.0"),
    "p5en": ("NVIDIA H200", "9.0"),
    "p6-b200": ("NVIDIA B200", "10.0"),
    "p6e-gb200": ("NVIDIA B200", "10.0"),
}


def job(instance_type: str, version: str | None = "2.13.0", **code) -> dict:
    pinned = {"framework_version": version} if version else {}
    return {
        "name": "job",
        "strategy": {"kind": "pytorch_ddp"},
        "cluster": {"instance_type": instance_type, "instance_count": 2},
        "code": {**pinned, **code},
    }


def plans(data: dict) -> smdist.Plan:
    return smdist.plan(JobSpec.from_dict(data))


def refusal(data: dict):
    with pytest.raises(SpecError) as caught:
        plans(data)
    (problem,) = [p for p in caught.value.problems if p.path == "cluster.instance_type"]
    return problem


def validate(tmp_path, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- the facts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("family", sorted(GPU_FAMILIES))
def test_every_gpu_family_states_its_gpus_compute_capability(family):
    model, capability = GPU_FAMILIES[family]
    infos = [catalog.instance(name) for name in catalog.known_instance_types()]
    mine = [info for info in infos if info.family == family]
    assert mine
    for info in mine:
        assert (info.gpu_model, info.gpu_compute_capability) == (model, capability)


def test_only_gpu_instances_have_a_compute_capability():
    for name in catalog.known_instance_types():
        info = catalog.instance(name)
        assert (info.gpu_compute_capability is not None) == (info.accelerator == "gpu"), name


@pytest.mark.parametrize(
    ("version", "cuda"),
    [("2.6.0", "12.6"), ("2.7.1", "12.8"), ("2.8.0", "12.9"), ("2.9.0", "13.0")]
    + [("2.10.0", "13.0"), ("2.11.0", "13.0"), ("2.12.1", "13.0"), ("2.13.0", "13.3")],
)
def test_pytorch_images_record_their_cuda_build(version, cuda):
    assert images.find_image("pytorch-training", version).cuda == cuda


def test_every_pytorch_gpu_image_names_its_cuda_build():
    for image in images.training_images("pytorch-training"):
        assert image.cuda, image.version


@pytest.mark.parametrize("version", ["2.9.0", "2.10.0", "2.11.0", "2.12.1", "2.13.0"])
def test_cuda_13_images_start_at_turing(version):
    image = images.find_image("pytorch-training", version)
    assert image.runs_on("7.0") is False  # Volta
    assert image.runs_on("7.5") and image.runs_on("12.0")


def test_pytorch_2_8_still_carries_volta_kernels():
    image = images.find_image("pytorch-training", "2.8.0")
    assert image.cuda == "12.9" and image.runs_on("7.0") is True


def test_images_whose_build_is_not_published_are_unknown_not_guessed():
    assert images.find_image("pytorch-training", "2.3.0").runs_on("7.0") is None
    assert images.find_image("tensorflow-training", "2.21.0").runs_on("7.0") is None


@pytest.mark.parametrize(
    ("build", "gpu", "runs"),
    [
        (["8.0"], "8.6", True),  # a cubin runs on later GPUs of its major version
        (["8.6"], "8.0", False),
        (["9.0"], "10.0", False),  # ... never across major versions
        (["10.0"], "10.3", True),  # B300 runs B200 code
        (["9.0", "12.0+PTX"], "12.1", True),
        (["7.5+PTX"], "9.0", True),  # PTX is compiled for any later GPU
        (["7.5+PTX"], "7.0", False),
    ],
)
def test_nvidia_compatibility_rules(build, gpu, runs):
    assert compute_capability.runs_on(build, gpu) is runs


# --- the refusal -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.9", "2.10.0", "2.11.0", "2.12.1", "2.13.0"])
@pytest.mark.parametrize(
    "instance_type", ["ml.p3.2xlarge", "ml.p3.8xlarge", "ml.p3.16xlarge", "ml.p3dn.24xlarge"]
)
def test_pytorch_2_9_and_later_are_refused_on_a_v100(instance_type, version):
    problem = refusal(job(instance_type, version))
    image = images.find_image("pytorch-training", version)
    assert problem.value == instance_type and instance_type in problem.message
    assert "NVIDIA V100" in problem.message and "compute capability 7.0" in problem.message
    assert f"PyTorch {image.version}" in problem.message
    assert f"CUDA {image.cuda} build" in problem.message
    assert "no kernel image is available" in problem.message
    assert "code.framework_version 2.8.0" in problem.valid  # the newest that runs there


def test_the_refusal_names_instance_types_with_as_many_gpus():
    problem = refusal(job("ml.p3.2xlarge"))
    suggested = problem.valid.split("e.g. ")[1].split(";")[0].split(", ")
    assert "ml.g4dn.xlarge" in suggested and "ml.g5.xlarge" in suggested
    assert all(catalog.instance(name).gpus == 1 for name in suggested)
    eight = refusal(job("ml.p3.16xlarge")).valid.split("e.g. ")[1].split(";")[0].split(", ")
    assert all(catalog.instance(name).gpus == 8 for name in eight)


@pytest.mark.parametrize("instance_type", ["ml.p3.2xlarge", "ml.p3.16xlarge", "ml.p3dn.24xlarge"])
def test_pytorch_2_8_is_accepted_on_a_v100(instance_type):
    assert plans(job(instance_type, "2.8.0"))


@pytest.mark.parametrize(
    "instance_type",
    ["ml.g4dn.xlarge", "ml.g5.xlarge", "ml.g5.48xlarge", "ml.p4d.24xlarge", "ml.p5.48xlarge"],
)
def test_pytorch_2_13_is_accepted_on_turing_and_later(instance_type):
    assert plans(job(instance_type, "2.13.0"))


def test_a_blackwell_gpu_needs_a_build_with_its_kernels():
    problem = refusal(job("ml.p6-b200.48xlarge", "2.6.0"))
    assert "compute capability 10.0" in problem.message and "CUDA 12.6" in problem.message
    assert plans(job("ml.p6-b200.48xlarge", "2.8.0"))


def test_a_dlc_image_uri_whose_tag_names_the_version_is_checked():
    uri = f"{DLC}/pytorch:2.13.0-cu133-amzn2023-sagemaker"
    problem = refusal(job("ml.p3.2xlarge", None, image_uri=uri))
    assert "PyTorch 2.13.0" in problem.message and "2.8.0" in problem.valid
    assert plans(job("ml.g5.xlarge", None, image_uri=uri))


def test_an_older_dlc_image_uri_still_runs_on_a_v100():
    uri = f"{DLC}/pytorch-training:2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker"
    assert plans(job("ml.p3.2xlarge", None, image_uri=uri))


def test_a_custom_image_is_the_users_to_know():
    uri = "123456789012.dkr.ecr.us-west-2.amazonaws.com/pytorch:2.13.0-cu133-amzn2023-sagemaker"
    assert plans(job("ml.p3.2xlarge", None, image_uri=uri))


def test_an_unpinned_job_is_warned_that_the_newest_image_cannot_run_there():
    plan = plans(job("ml.p3.2xlarge", None))
    (warning,) = [w for w in plan.warnings if w.path == "cluster.instance_type"]
    assert "newest" in warning.message and "2.8.0" in warning.valid


def test_cpu_and_local_mode_instances_are_not_checked():
    assert plans(job("ml.c5.xlarge", "2.13.0"))
    assert plans({**job("local_gpu", "2.13.0"), "cluster": {"instance_type": "local_gpu"}})


# --- on the command line -----------------------------------------------------------------------

P3_JOB = "name: j\nstrategy: {kind: pytorch_ddp}\ncluster: {instance_type: ml.p3.2xlarge}\n"


def test_validate_refuses_pytorch_2_13_on_a_p3_with_exit_2(tmp_path):
    done = validate(tmp_path, P3_JOB + 'code: {framework_version: "2.13.0"}\n')
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    for text in ("cluster.instance_type", "ml.p3.2xlarge", "V100", "compute capability 7.0"):
        assert text in done.stderr
    assert "PyTorch 2.13.0" in done.stderr and "CUDA 13.3" in done.stderr
    assert "2.8.0" in done.stderr and "ml.g4dn.xlarge" in done.stderr


def test_validate_accepts_pytorch_2_8_on_a_p3(tmp_path):
    done = validate(tmp_path, P3_JOB + 'code: {framework_version: "2.8.0"}\n')
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "instance_type", ["ml.g4dn.xlarge", "ml.g5.xlarge", "ml.p4d.24xlarge", "ml.p5.48xlarge"]
)
def test_validate_accepts_pytorch_2_13_on_newer_gpus(tmp_path, instance_type):
    text = P3_JOB.replace("ml.p3.2xlarge", instance_type)
    done = validate(tmp_path, text + 'code: {framework_version: "2.13.0"}\n')
    assert done.returncode == 0, done.stderr
