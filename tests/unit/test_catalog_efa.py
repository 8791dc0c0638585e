"""The instance -> EFA / NCCL table: its facts, and the environment derived from them."""

from __future__ import annotations

from collections import defaultdict

import pytest

from smdist import Cluster, Horovod, catalog
from smdist.catalog import efa

# SageMaker Python SDK 3.27.0, sagemaker/train/container_drivers/common/utils.py (the training
# toolkit's lists after its PR #241). Each name there must agree with the catalogue.
SDK_V3_EFA_NCCL_INSTANCES = [
    "ml.g4dn.8xlarge",
    "ml.g4dn.12xlarge",
    "ml.g5.48xlarge",
    "ml.p3dn.24xlarge",
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.trn1.32xlarge",
]
SDK_V3_EFA_RDMA_INSTANCES = [
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.trn1.32xlarge",
]
RDMA = {"FI_PROVIDER": "efa", "NCCL_PROTO": "simple", "FI_EFA_USE_DEVICE_RDMA": "1"}


def all_instances() -> list[catalog.InstanceInfo]:
    return [catalog.instance(name) for name in catalog.known_instance_types()]


@pytest.mark.parametrize(
    "instance_type",
    ["ml.p5e.48xlarge", "ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.p6e-gb200.36xlarge"],
)
def test_the_instances_sagemakers_lists_missed_are_efa_with_rdma(instance_type):
    info = catalog.instance(instance_type)
    assert info.training and info.efa and info.efa_rdma
    assert efa.nccl_environment(instance_type) == {**RDMA, "RDMAV_FORK_SAFE": "1"}


def test_sagemakers_own_lists_agree_with_the_catalogue():
    for name in SDK_V3_EFA_NCCL_INSTANCES:
        assert catalog.instance(name).efa, name
    for name in SDK_V3_EFA_RDMA_INSTANCES:
        assert catalog.instance(name).efa_rdma, name
    # ... and the catalogue knows EFA instances those lists do not.
    missed = {info.instance_type for info in all_instances() if info.efa} - set(
        SDK_V3_EFA_NCCL_INSTANCES
    )
    assert {"ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.trn2.48xlarge"} <= missed


def test_efa_without_rdma_is_the_older_nitro_generation():
    without = {info.family for info in all_instances() if info.efa and not info.efa_rdma}
    assert without == {"p3dn", "g4dn", "g5", "c5n"}


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("ml.g7e.48xlarge", {**RDMA, "RDMAV_FORK_SAFE": "1"}),
        ("ml.g7e.8xlarge", {**RDMA, "RDMAV_FORK_SAFE": "1"}),
        ("ml.g7e.4xlarge", {"NCCL_IB_DISABLE": "1"}),
        ("ml.p6-b300.48xlarge", {**RDMA, "RDMAV_FORK_SAFE": "1"}),
    ],
)
def test_the_new_gpu_families_get_their_settings_from_the_catalogue(instance_type, expected):
    assert efa.nccl_environment(instance_type) == expected


@pytest.mark.parametrize("instance_type", ["ml.c5n.18xlarge", "ml.c6i.32xlarge", "ml.r8i.96xlarge"])
def test_a_cpu_instances_efa_gets_no_fabric_settings(instance_type):
    info = catalog.instance(instance_type)
    assert info.efa and info.fabric == (False, False)
    assert efa.nccl_environment(instance_type) == {}
    cluster = Cluster(instance_type=instance_type, instance_count=2)
    launch = Horovod(framework="tensorflow").launch(cluster, "train.py")
    assert (launch.efa, launch.efa_rdma) == (False, False)


def test_rdma_is_the_same_for_every_efa_instance_of_a_family():
    # EFA generations go by family: a family split on RDMA would make its facts suspect.
    rdma_by_family: dict[str, set[bool]] = defaultdict(set)
    for info in all_instances():
        if info.efa:
            rdma_by_family[info.family].add(info.efa_rdma)
    assert {family for family, values in rdma_by_family.items() if len(values) > 1} == set()


def test_efa_interfaces_follow_the_network_cards():
    counts = {
        name: catalog.instance(name).efa_interfaces
        for name in (
            "ml.p4d.24xlarge",
            "ml.p5.48xlarge",
            "ml.p5e.48xlarge",
            "ml.p5en.48xlarge",
            "ml.p6-b200.48xlarge",
            "ml.trn2.48xlarge",
            "ml.g6e.48xlarge",
            "ml.g5.48xlarge",
            "ml.p3dn.24xlarge",
        )
    }
    assert counts == {
        "ml.p4d.24xlarge": 4,
        "ml.p5.48xlarge": 32,
        "ml.p5e.48xlarge": 32,
        "ml.p5en.48xlarge": 16,
        "ml.p6-b200.48xlarge": 8,
        "ml.trn2.48xlarge": 16,
        "ml.g6e.48xlarge": 4,
        "ml.g5.48xlarge": 1,
        "ml.p3dn.24xlarge": None,  # not documented: unknown, not guessed
    }
    for info in all_instances():
        if not info.efa:
            assert (info.efa_rdma, info.efa_interfaces) == (False, None), info.instance_type


def test_efa_without_rdma_does_not_force_rdma():
    assert efa.nccl_environment("ml.g5.48xlarge") == {
        "FI_PROVIDER": "efa",
        "NCCL_PROTO": "simple",
    }


def test_a_gpu_instance_without_efa_disables_infiniband():
    assert efa.nccl_environment("ml.g5.xlarge") == {"NCCL_IB_DISABLE": "1"}


def test_a_cpu_instance_needs_no_nccl_settings():
    assert efa.nccl_environment("ml.c5.xlarge") == {}


def test_an_unknown_instance_type_is_refused_with_a_suggestion():
    with pytest.raises(ValueError, match=r"Unknown instance type 'p5en.48xlarge'.*ml\.p5en"):
        efa.nccl_environment("p5en.48xlarge")


def test_an_efa_instance_must_state_its_rdma_support(monkeypatch):
    bad = {
        "catalog_date": "2026-11-23",
        "price_region": "us-east-1",
        "gpu_architectures": {"hopper": {"bf16": True, "tf32": True}},
        "families": {
            "p5en": {
                "defaults": {"accelerator": "gpu", "gpu_arch": "hopper", "efa": True},
                "instances": {"ml.p5en.48xlarge": {"vcpus": 192, "memory_gib": 2048, "gpus": 8}},
            }
        },
    }
    monkeypatch.setattr(catalog, "_read_yaml", lambda file_name: bad)
    catalog._instance_catalog.cache_clear()
    try:
        with pytest.raises(
            catalog.CatalogError, match=r"ml\.p5en\.48xlarge: efa_rdma must be true"
        ):
            catalog.instance("ml.p5en.48xlarge")
    finally:
        monkeypatch.undo()
        catalog._instance_catalog.cache_clear()
    assert catalog.instance("ml.p5en.48xlarge").efa_rdma
