"""Every example smdist runs on HyperPod EKS renders a resource the HyperPod SDK's own models
accept, whose pod template Kubernetes' schema accepts, with the CLI's resources for its
instance type; runs where ``sagemaker-hyperpod`` and ``kubernetes-validate`` are installed
(``.ci/install-tests``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import smdist
from smdist.backends import registry

pytest.importorskip(
    "sagemaker.hyperpod.training.hyperpod_pytorch_job", reason="needs sagemaker-hyperpod"
)
pytest.importorskip("kubernetes_validate", reason="needs kubernetes-validate")

from tests.hyperpod_eks.validation import config_map_errors, job_errors  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUNS = ["pytorch_ddp.yaml", "pytorch_ddp_torch_distributed.yaml", "smp_v2.yaml"]


def rendered(spec: dict, **options) -> tuple[dict, dict]:
    backend = registry.get("hyperpod-eks")
    chosen = backend.options({"job_name": "hp-models", **options})
    value = backend.dry_run(smdist.plan(spec), chosen)
    config_map, job = yaml.safe_load_all(backend.show(value.plan, value)[0])
    return config_map, job


@pytest.mark.parametrize("example", RUNS)
def test_the_dry_run_of_each_example_is_accepted_by_the_hyperpod_models(example):
    spec = yaml.safe_load((EXAMPLES / example).read_text())
    config_map, job = rendered(spec, pvc="fsx-claim", queue="team-a", deep_health_checked=True)
    assert job_errors(job) == []
    assert config_map_errors(config_map) == []


def test_a_field_the_models_do_not_know_is_refused():
    _, job = rendered(yaml.safe_load((EXAMPLES / "pytorch_ddp.yaml").read_text()))
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["bogus"] = 1
    assert job_errors(job)


@pytest.mark.parametrize("instance_type", ["ml.g5.12xlarge", "ml.p5.48xlarge", "ml.c5.xlarge"])
def test_the_resources_are_the_hyperpod_clis_for_a_whole_node(instance_type):
    from sagemaker.hyperpod.training.quota_allocation_util import (
        _get_resources_from_instance,
        _resolve_default_cpu_values,
        _resolve_default_memory_values,
        _trim_resource_requests,
    )

    cli = _get_resources_from_instance(instance_type, node_count=1)
    _trim_resource_requests(instance_type, cli)
    limits: dict = {}
    _resolve_default_memory_values(instance_type, cli, limits)
    _resolve_default_cpu_values(instance_type, cli)
    spec = {
        "name": "hp",
        "strategy": {"kind": "pytorch_ddp"},
        "cluster": {"instance_type": instance_type, "instance_count": 2},
        "code": {"framework_version": "2.13.0", "py_version": "py312"},
    }
    _, job = rendered(spec)
    ours = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["resources"]
    assert float(ours["requests"]["cpu"]) == float(cli["cpu"])
    assert float(ours["requests"]["memory"][:-2]) == float(cli["memory"][:-2])
    for device in ("nvidia.com/gpu", "vpc.amazonaws.com/efa"):
        assert int(ours["requests"].get(device, 0)) == int(cli.get(device, 0))
