"""The instance and framework catalogue: its data holds together and its lookups answer right."""

from __future__ import annotations

import dataclasses
import re
from importlib import resources

import pytest
import yaml

from smdist import catalog
from smdist.catalog import api, images

REQUIRED_INSTANCE_TYPES = [
    "ml.p3.2xlarge",
    "ml.p3.8xlarge",
    "ml.p3.16xlarge",
    "ml.p3dn.24xlarge",
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
    *[f"ml.g4dn.{size}" for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge")],
    "ml.g4dn.16xlarge",
    *[
        f"ml.{family}.{size}"
        for family in ("g5", "g6", "g6e")
        for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")
    ],
    *[f"ml.{family}.{size}" for family in ("g5", "g6", "g6e") for size in ("24xlarge", "48xlarge")],
    "ml.trn1.2xlarge",
    "ml.trn1.32xlarge",
    "ml.trn1n.32xlarge",
    *[f"ml.c5.{size}" for size in ("xlarge", "2xlarge", "4xlarge", "9xlarge", "18xlarge")],
    *[f"ml.m5.{size}" for size in ("large", "xlarge", "2xlarge", "4xlarge", "12xlarge")],
    "ml.m5.24xlarge",
    "ml.p2.xlarge",
    "ml.p2.8xlarge",
    "ml.p2.16xlarge",
]
AMPERE_OR_NEWER_GPUS = {
    "NVIDIA A100",
    "NVIDIA A10G",
    "NVIDIA L4",
    "NVIDIA L40S",
    "NVIDIA H100",
    "NVIDIA H200",
    "NVIDIA B200",
    "NVIDIA B300",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition",
}
OLDER_GPUS = {"NVIDIA K80", "NVIDIA V100", "NVIDIA T4"}


def raw_yaml(file_name: str) -> dict:
    text = resources.files("smdist.catalog").joinpath(file_name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def all_instances() -> list[catalog.InstanceInfo]:
    return [catalog.instance(name) for name in catalog.known_instance_types()]


# --- the data holds together ---------------------------------------------------------------


def test_every_required_instance_type_is_catalogued():
    missing = [name for name in REQUIRED_INSTANCE_TYPES if catalog.instance(name) is None]
    assert missing == []


def test_instance_family_matches_the_name():
    for info in all_instances():
        assert info.instance_type == f"ml.{info.family}.{info.instance_type.split('.')[2]}"


def test_gpu_instances_have_gpus_and_a_model():
    for info in all_instances():
        if info.accelerator != "gpu":
            continue
        assert info.gpus in (1, 2, 4, 8, 16), info.instance_type
        assert info.gpu_model and info.gpu_model.startswith("NVIDIA "), info.instance_type
        assert info.gpu_memory_gib and info.gpu_memory_gib >= 12, info.instance_type
        assert info.accelerators == info.gpus, info.instance_type
        assert "nccl" in info.libraries, info.instance_type
        assert "neuron" not in info.libraries, info.instance_type


def test_cpu_instances_have_no_accelerators_or_gpu_libraries():
    cpu = [info for info in all_instances() if info.accelerator == "cpu"]
    assert cpu
    for info in cpu:
        assert (info.gpus, info.accelerators, info.gpu_model, info.gpu_memory_gib) == (
            0,
            0,
            None,
            None,
        ), info.instance_type
        assert info.libraries == frozenset(), info.instance_type
        assert not info.bf16 and not info.tf32, info.instance_type


def test_neuron_instances_count_chips_not_gpus():
    neuron = [info for info in all_instances() if info.accelerator in ("trainium", "inferentia")]
    families = {info.family: info.accelerator for info in neuron}
    assert families == {
        "trn1": "trainium",
        "trn1n": "trainium",
        "trn2": "trainium",
        "inf2": "inferentia",
    }
    for info in neuron:
        assert info.gpus == 0 and info.gpu_model is None, info.instance_type
        assert info.accelerators >= 1, info.instance_type
        assert info.libraries == frozenset({"neuron"}), info.instance_type


def test_catalogued_training_instances_are_in_the_api_enum():
    api_types = set(catalog.training_instance_types())
    for info in all_instances():
        assert (info.instance_type in api_types) == info.training, info.instance_type


def test_only_inferentia_is_catalogued_as_not_for_training():
    not_training = {info.family for info in all_instances() if not info.training}
    assert not_training == {"inf2"}


def test_sagemaker_libraries_only_run_where_nccl_does():
    for info in all_instances():
        for library in ("smddp", "smp_v1", "smp_v2"):
            if library in info.libraries:
                assert "nccl" in info.libraries, (library, info.instance_type)


def test_smddp_instances_are_multi_gpu_efa_instances():
    smddp = [info for info in all_instances() if "smddp" in info.libraries]
    assert smddp
    for info in smddp:
        assert info.efa and info.gpus == 8, info.instance_type


def test_libraries_are_known_names():
    for info in all_instances():
        assert info.libraries <= catalog.INSTANCE_LIBRARIES, info.instance_type


def test_prices_are_positive_or_unknown():
    for info in all_instances():
        assert info.price_per_hour is None or info.price_per_hour > 0, info.instance_type


def test_larger_multi_gpu_sizes_cost_more_than_smaller_sizes_of_their_family():
    # A price entered against the wrong size shows up as a bigger instance costing less.
    for info in all_instances():
        if info.price_per_hour is None:
            continue
        for other in all_instances():
            if (
                other.family == info.family
                and other.price_per_hour is not None
                and other.vcpus > info.vcpus
                and other.gpus >= info.gpus
                and other.gpus > 1
            ):
                assert other.price_per_hour > info.price_per_hour, (info, other)


def test_retired_instances_are_the_p2_family_and_say_why():
    retired = {info.instance_type for info in all_instances() if info.retired}
    assert retired == {"ml.p2.xlarge", "ml.p2.8xlarge", "ml.p2.16xlarge"}
    for name in retired:
        note = catalog.instance(name).note
        assert note and "ml.g4dn.xlarge" in note


def test_bf16_and_tf32_only_on_ampere_or_newer_gpus():
    for info in all_instances():
        if info.bf16 or info.tf32:
            assert info.gpu_model in AMPERE_OR_NEWER_GPUS, info.instance_type
        if info.gpu_model in AMPERE_OR_NEWER_GPUS:
            assert info.bf16 and info.tf32, info.instance_type
        if info.gpu_model in OLDER_GPUS:
            assert not info.bf16 and not info.tf32, info.instance_type


def test_instance_memory_and_vcpus_are_plausible():
    for info in all_instances():
        assert info.vcpus >= 2 and info.memory_gib >= 4, info.instance_type
        # Memory-optimised CPU types have 8 GiB per vCPU; a GPU host up to 4 TiB for 192 vCPUs
        # (ml.p6-b300.48xlarge).
        most = 16 if info.accelerator == "cpu" else 24
        assert info.memory_gib / info.vcpus <= most, info.instance_type


def test_catalog_date_and_region_come_from_the_file_headers():
    instances_header = raw_yaml("instances.yaml")
    frameworks_header = raw_yaml("frameworks.yaml")
    images_header = raw_yaml("images.yaml")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", catalog.catalog_date())
    assert catalog.catalog_date() == min(
        instances_header["catalog_date"],
        frameworks_header["catalog_date"],
        images_header["catalog_date"],
        api.snapshot_date(),
    )
    assert images_header["sources"]
    assert catalog.CATALOG_DATE == catalog.catalog_date()
    assert catalog.price_region() == instances_header["price_region"]
    assert instances_header["sources"] and frameworks_header["sources"]


def test_every_version_string_in_the_framework_file_parses():
    data = raw_yaml("frameworks.yaml")
    for library, spec in data["libraries"].items():
        for framework in data["frameworks"]:
            for version in spec[framework]["versions"]:
                assert catalog.compare_versions(version, version) == 0, (library, version)
    for family in raw_yaml("images.yaml")["families"].values():
        for version, image in family["versions"].items():
            assert catalog.compare_versions(version, version) == 0
            assert image["py"] and all(py.startswith("py") for py in image["py"]), version


def test_ended_framework_support_records_the_last_version():
    data = raw_yaml("frameworks.yaml")
    smp_v1_tf = data["libraries"]["smp_v1"]["tensorflow"]
    assert (
        catalog.supported_versions("smp_v1", "tensorflow")[-1]
        == (smp_v1_tf["ended"]["last_version"])
    )
    smddp_tf = data["libraries"]["smddp"]["tensorflow"]
    assert smddp_tf["ended"]["last_version"] == max(
        smddp_tf["historical_versions"], key=lambda v: tuple(map(int, v.split(".")))
    )


def test_smddp_is_pytorch_only_now():
    assert catalog.supported_versions("smddp", "tensorflow") == []
    assert catalog.supported_versions("smddp", "pytorch")
    assert not catalog.is_version_supported("smddp", "tensorflow", "2.11.0")


def test_mwms_minimum_is_available_as_a_tensorflow_dlc():
    minimum = catalog.minimum_version("mwms_distribution", "tensorflow")
    assert minimum == "2.9"
    newer = [
        v for v in catalog.dlc_versions("tensorflow") if catalog.compare_versions(v, minimum) >= 0
    ]
    assert newer


def test_torch_distributed_minimum_is_its_oldest_supported_version():
    assert (
        catalog.minimum_version("torch_distributed", "pytorch")
        == (catalog.supported_versions("torch_distributed", "pytorch")[0])
    )


def test_every_training_type_the_api_lists_is_catalogued_or_unknown_with_a_reason():
    unknown = catalog.unknown_instance_types()
    for name in catalog.training_instance_types():
        assert catalog.instance(name) is not None or unknown.get(name), name
    assert all(len(reason) > 40 for reason in unknown.values())
    assert not set(unknown) & set(catalog.known_instance_types())
    assert set(unknown) <= set(catalog.training_instance_types())


@pytest.mark.parametrize(
    "instance_type",
    [
        "ml.g7e.2xlarge",
        "ml.g7e.48xlarge",
        "ml.p6-b200.48xlarge",
        "ml.p6-b300.48xlarge",
        "ml.p5e.48xlarge",
        "ml.p5en.48xlarge",
        "ml.trn2.48xlarge",
    ],
)
def test_the_newest_accelerated_types_are_known(instance_type):
    info = catalog.instance(instance_type)
    assert info is not None and info.training and not info.retired
    assert info.accelerators >= 1 and info.efa in (True, False)


@pytest.mark.parametrize(
    ("size", "gpus", "efa"),
    [("2xlarge", 1, False), ("4xlarge", 1, False), ("8xlarge", 1, True)]
    + [("12xlarge", 2, True), ("24xlarge", 4, True), ("48xlarge", 8, True)],
)
def test_g7e_sizes(size, gpus, efa):
    info = catalog.instance(f"ml.g7e.{size}")
    assert (info.gpus, info.gpu_memory_gib, info.efa) == (gpus, 96.0, efa)
    assert info.gpu_compute_capability == "12.0" and info.bf16


def test_p6_b300_has_eight_b300_gpus():
    info = catalog.instance("ml.p6-b300.48xlarge")
    assert (info.gpus, info.gpu_model, info.gpu_compute_capability) == (8, "NVIDIA B300", "10.3")
    assert (info.vcpus, info.memory_gib, info.efa, info.efa_rdma) == (192, 4096.0, True, True)


@pytest.mark.parametrize(
    ("instance_type", "vcpus", "memory_gib"),
    [
        ("ml.c6i.32xlarge", 128, 256),  # c: 2 GiB per vCPU
        ("ml.m7i-flex.16xlarge", 64, 256),  # m: 4
        ("ml.r8i.96xlarge", 384, 3072),  # r: 8
        ("ml.r5d.large", 2, 16),
        ("ml.c4.8xlarge", 36, 60),  # the older families' own figures
        ("ml.c5n.18xlarge", 72, 192),
        ("ml.m4.10xlarge", 40, 160),
        ("ml.t3.medium", 2, 4),
    ],
)
def test_cpu_types_follow_the_size_names(instance_type, vcpus, memory_gib):
    info = catalog.instance(instance_type)
    assert (info.accelerator, info.gpus, info.vcpus, info.memory_gib) == (
        "cpu",
        0,
        vcpus,
        memory_gib,
    )


def test_an_unpriced_type_says_why():
    families = raw_yaml("instances.yaml")["families"]  # read once: it is the whole catalogue
    for info in all_instances():
        if info.price_per_hour is None:
            said = info.retired or not info.training or _price_note(families, info.instance_type)
            assert said, info.instance_type


def _price_note(families: dict, instance_type: str) -> str | None:
    spec = families[instance_type.split(".")[1]]
    entry = spec["instances"][instance_type] or {}
    return entry.get("price_note") or spec["defaults"].get("price_note")


# --- lookups ---------------------------------------------------------------------------------


def test_instance_lookup_returns_the_facts():
    info = catalog.instance("ml.p4d.24xlarge")
    assert (info.family, info.gpus, info.gpu_model, info.gpu_memory_gib) == (
        "p4d",
        8,
        "NVIDIA A100",
        40.0,
    )
    assert info.accelerator == "gpu" and info.efa and info.bf16
    assert catalog.instance("ml.p3.2xlarge").gpus == 1


def test_instance_without_ml_prefix_is_unknown():
    assert catalog.instance("p3.2xlarge") is None


def test_unknown_instance_is_none():
    assert catalog.instance("ml.p9.2xlarge") is None
    assert catalog.instance("") is None


def test_g4dn_metal_is_not_a_training_instance():
    assert catalog.instance("ml.g4dn.metal") is None


def test_trn2_and_inf2_are_known_by_accelerator():
    trn2 = catalog.instance("ml.trn2.48xlarge")
    assert (trn2.accelerator, trn2.accelerators, trn2.training) == ("trainium", 16, True)
    inf2 = catalog.instance("ml.inf2.48xlarge")
    assert (inf2.accelerator, inf2.accelerators, inf2.training) == ("inferentia", 12, False)


def test_instance_info_is_immutable():
    info = catalog.instance("ml.g5.xlarge")
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.gpus = 2


def test_known_instance_types_are_sorted_and_unique():
    names = catalog.known_instance_types()
    assert names == sorted(set(names))
    assert "ml.p2.xlarge" in names


def test_known_instance_types_returns_a_fresh_list():
    catalog.known_instance_types().clear()
    assert catalog.known_instance_types()


# --- suggestions -----------------------------------------------------------------------------


def test_suggestion_adds_the_ml_prefix():
    assert catalog.closest_instance_types("p3.2xlarge")[0] == "ml.p3.2xlarge"


def test_suggestion_survives_case_and_spaces():
    assert catalog.closest_instance_types("  ML.G5.XLARGE ")[0] == "ml.g5.xlarge"


def test_suggestion_finds_a_typo():
    assert "ml.p4d.24xlarge" in catalog.closest_instance_types("ml.p4d.24xlrage")
    assert "ml.g5.12xlarge" in catalog.closest_instance_types("g5.12xl")


def test_suggestions_respect_the_limit():
    assert len(catalog.closest_instance_types("ml.g5.xlarge", n=2)) == 2
    assert catalog.closest_instance_types("ml.g5.xlarge", n=0) == []


def test_suggestions_are_training_instance_types_only():
    assert all(
        name in catalog.training_instance_types()
        for name in catalog.closest_instance_types("ml.inf2.xlarge", n=5)
    )


def test_nothing_is_suggested_for_nonsense():
    assert catalog.closest_instance_types("") == []
    assert catalog.closest_instance_types("quantum-computer-9000") == []


# --- versions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("2.3.0", "2.3.0", 0),
        ("2.3", "2.3.0", 0),
        ("2.3", "2.3.1", -1),
        ("2.10", "2.9", 1),
        ("2.9.2", "2.10.0", -1),
        ("1.13.1", "2.0", -1),
        ("2.0.10", "2.0.9", 1),
    ],
)
def test_compare_versions(a, b, expected):
    assert catalog.compare_versions(a, b) == expected
    assert catalog.compare_versions(b, a) == -expected


@pytest.mark.parametrize("bad", ["2", "two.three", "2.3.4.5", "v2.3", "", "2.3-rc1"])
def test_compare_versions_rejects_malformed_versions(bad):
    with pytest.raises(ValueError, match="major.minor"):
        catalog.compare_versions(bad, "2.3")


def test_supported_versions_are_sorted_oldest_first():
    for library in ("smddp", "smp_v1", "smp_v2", "torch_distributed"):
        versions = catalog.supported_versions(library, "pytorch")
        keys = [tuple(int(part) for part in v.split(".")) for v in versions]
        assert keys == sorted(keys), library


def test_supported_versions_returns_a_copy():
    catalog.supported_versions("smddp", "pytorch").clear()
    assert catalog.supported_versions("smddp", "pytorch")


def test_minor_version_matches_any_patch_release():
    assert catalog.is_version_supported("smddp", "pytorch", "2.3")
    assert catalog.is_version_supported("smp_v2", "pytorch", "2.1")


def test_patch_version_must_match_exactly():
    assert catalog.is_version_supported("smp_v2", "pytorch", "2.1.2")
    assert not catalog.is_version_supported("smp_v2", "pytorch", "2.1.0")


def test_versions_outside_the_list_are_not_supported():
    assert not catalog.is_version_supported("smp_v2", "pytorch", "1.13.1")
    assert not catalog.is_version_supported("smddp", "pytorch", "9.0")


def test_is_version_supported_rejects_malformed_versions():
    with pytest.raises(ValueError, match="major.minor"):
        catalog.is_version_supported("smddp", "pytorch", "latest")


def test_minimum_version_is_none_when_the_feature_does_not_apply():
    assert catalog.minimum_version("mwms_distribution", "pytorch") is None


def test_dlc_versions_map_versions_to_python_versions():
    pytorch = catalog.dlc_versions("pytorch")
    keys = [tuple(int(part) for part in v.split(".")) for v in pytorch]
    assert keys == sorted(keys)
    assert pytorch["2.0.0"] == ["py310"]
    assert pytorch["2.10.0"] == ["py313"] and pytorch["2.9.0"] == ["py312"]
    assert "2.11.0" in catalog.dlc_versions("tensorflow")
    assert catalog.dlc_versions("tensorflow")["2.21.0"] == ["py312"]


# --- errors ----------------------------------------------------------------------------------


def test_unknown_library_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"Unknown library 'smdp'.*smddp.*smp_v1.*smp_v2"):
        catalog.supported_versions("smdp", "pytorch")


def test_unknown_framework_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"Unknown framework 'mxnet'.*pytorch, tensorflow"):
        catalog.supported_versions("smddp", "mxnet")
    with pytest.raises(ValueError, match="Unknown framework"):
        catalog.dlc_versions("jax")
    with pytest.raises(ValueError, match="Unknown framework"):
        catalog.is_version_supported("smddp", "jax", "1.0")


def test_unknown_feature_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"Unknown feature 'mwms'.*mwms_distribution"):
        catalog.minimum_version("mwms", "tensorflow")


def test_malformed_instance_data_is_reported_with_its_location(monkeypatch):
    bad = {
        "catalog_date": "2026-11-22",
        "price_region": "us-east-1",
        "gpu_architectures": {},
        "families": {
            "g5": {
                "defaults": {"accelerator": "gpu", "efa": False},
                "instances": {"ml.g5.xlarge": {"vcpus": 4, "memory_gib": 16, "gpuz": 1}},
            }
        },
    }
    monkeypatch.setattr(catalog, "_read_yaml", lambda file_name: bad)
    catalog._instance_catalog.cache_clear()
    try:
        with pytest.raises(catalog.CatalogError, match=r"ml\.g5\.xlarge: unknown keys \['gpuz'\]"):
            catalog.instance("ml.g5.xlarge")
    finally:
        monkeypatch.undo()
        catalog._instance_catalog.cache_clear()
    assert catalog.instance("ml.g5.xlarge") is not None


def test_images_carry_a_library_only_at_versions_it_supports():
    # An image listing smddp or SMP v1 must be a version the library's support table names.
    for repository in ("pytorch-training", "tensorflow-training"):
        for image in images.training_images(repository):
            for library in image.libraries & {"smddp", "smp_v1"}:
                assert catalog.is_version_supported(library, image.framework, image.version), (
                    repository,
                    image.version,
                    library,
                )


def test_smp_v2_images_are_the_smp_v2_versions():
    versions = [i.version for i in images.training_images("smdistributed-modelparallel")]
    assert versions == catalog.supported_versions("smp_v2", "pytorch")


def test_horovod_left_the_images_at_pytorch_2_0_1_and_tensorflow_2_13():
    def last_with_horovod(repository):
        return [i.version for i in images.training_images(repository) if "horovod" in i.libraries][
            -1
        ]

    assert last_with_horovod("pytorch-training") == "2.0.0"
    assert last_with_horovod("tensorflow-training") == "2.12.0"


def test_patched_images_are_todays():
    assert images.patched_versions("pytorch-training") == ["2.10.0", "2.11.0", "2.12.1", "2.13.0"]
    assert images.patched_versions("tensorflow-training") == ["2.21.0"]
