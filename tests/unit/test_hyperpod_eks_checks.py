"""What a job must be to run as a HyperPodPyTorchJob: every refusal names its field, the value and
what is valid, before anything is rendered or sent."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import smdist
from smdist.backends import registry
from smdist.backends.hyperpod_eks.checks import name_problems, refusals
from smdist.backends.hyperpod_eks.options import HyperPodEksOptions
from smdist.catalog import hyperpod_instance_types as instance_types
from smdist.errors import SpecError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plan(**fields):
    spec = {
        "name": "hp",
        "strategy": {"kind": "pytorch_ddp"},
        "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        "code": {"framework_version": "2.13.0", "py_version": "py312"},
        **fields,
    }
    return smdist.plan(spec)


def problems(options: HyperPodEksOptions | None = None, **fields) -> dict[str, str]:
    found = refusals(plan(**fields), options or HyperPodEksOptions())
    return {p.path: f"{p.message} (valid: {p.valid})" for p in found}


@pytest.mark.parametrize(
    ("example", "runs"),
    [
        ("pytorch_ddp.yaml", True),
        ("pytorch_ddp_torch_distributed.yaml", True),
        ("smp_v2.yaml", True),
        ("sddp.yaml", False),
        ("smp_v1.yaml", False),
        ("horovod_pytorch.yaml", False),
        ("horovod_tensorflow.yaml", False),
        ("mwms.yaml", False),
        ("tf_parameter_server.yaml", False),
    ],
)
def test_the_strategies_torchrun_starts_run_and_the_others_are_refused_saying_why(example, runs):
    spec = yaml.safe_load((EXAMPLES / example).read_text())
    found = refusals(smdist.plan(spec), HyperPodEksOptions())
    if runs:
        assert found == []
        return
    (strategy,) = [p for p in found if p.path == "strategy.kind"]
    assert strategy.message.startswith("does not run on hyperpod-eks: ")
    assert "pytorch_ddp (launcher torchrun or torch_distributed)" in (strategy.valid or "")


def test_an_instance_type_hyperpod_cannot_have_is_refused_naming_its_familys_types():
    found = problems(
        cluster={"instance_type": "ml.p3.16xlarge", "instance_count": 2},
        code={"framework_version": "2.8.0", "py_version": "py312"},
    )
    assert found["cluster.instance_type"].startswith(
        "is not an instance type a SageMaker HyperPod cluster can have (valid: e.g. ml.p5.48xlarge"
    )
    assert instance_types.same_family("ml.g5.64xlarge")[-1] == "ml.g5.48xlarge"


def test_a_channel_must_be_a_folder_of_the_shared_volume():
    inputs = {"training": "s3://bucket/train", "test": "file:///data/test"}
    without = problems(inputs=inputs)
    assert "no --pvc names one" in without["inputs.training.uri"]
    shared = HyperPodEksOptions(pvc="fsx-claim")
    found = problems(shared, inputs=inputs)
    assert "aws s3 sync s3://bucket/train /fsx/..." in found["inputs.training.uri"]
    assert "a folder under the shared volume's /fsx" in found["inputs.test.uri"]
    assert problems(shared, inputs={"training": "file:///fsx/data/train"}) == {}


@pytest.mark.parametrize("name", ["Upper-Case", "under_score", "-dash", "a" * 64, "dot.ted"])
def test_a_job_name_kubernetes_refuses_is_named_with_what_is_valid(name):
    (problem,) = name_problems(name, "name")
    assert problem.path == "name" and problem.value == name
    assert "at most 63 lower-case letters" in problem.valid


def test_a_spec_name_kubernetes_refuses_stops_the_dry_run_at_the_name():
    backend = registry.get("hyperpod-eks")
    with pytest.raises(SpecError) as raised:
        backend.dry_run(plan(name="My_Job"), HyperPodEksOptions())
    assert [p.path for p in raised.value.problems] == ["name"]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("namespace", "Team_A"),
        ("queue", "q" * 64),
        ("pvc", "FSX"),
        ("shared_mount", "fsx"),
        ("shared_mount", "/opt/ml"),
        ("job_root", "../up"),
        ("image", "repo/image:tag --privileged"),
        ("grace", 0),
    ],
)
def test_an_option_kubernetes_would_refuse_is_refused_naming_it(option, value):
    with pytest.raises(SpecError) as raised:
        HyperPodEksOptions.read("hyperpod-eks", {option: value})
    assert [p.path for p in raised.value.problems] == [f"options.{option}"]


def test_a_channel_sharded_by_s3_key_is_refused_every_pod_reads_it_whole():
    shared = HyperPodEksOptions(pvc="fsx-claim")
    channel = {"uri": "file:///fsx/data/train", "distribution": "ShardedByS3Key"}
    found = problems(shared, inputs={"training": channel})
    assert set(found) == {"inputs.training.distribution"}
    assert found["inputs.training.distribution"].startswith("every pod reads the same shared")
