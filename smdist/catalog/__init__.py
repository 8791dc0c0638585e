"""Facts about SageMaker instances and framework support, read from dated data files.

Instance types, GPU counts, prices and which framework versions each distributed library
supports change every few months. They live in data files next to this module, each with the
date the facts were taken and their sources: ``instances.yaml`` and ``frameworks.yaml`` (read
here), ``images.yaml`` (training containers, ``images.py``) and ``sagemaker_api.json`` (the API's
own limits, ``api.py``). Updating a fact is a data change and every check in smdist reads the
same answer. This module only loads, validates and answers questions about that data; it uses
the standard library and PyYAML and nothing else from smdist.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from smdist.yaml_text import parse_yaml

__all__ = [
    "CATALOG_DATE",
    "InstanceInfo",
    "catalog_date",
    "closest_instance_types",
    "compare_versions",
    "dlc_versions",
    "instance",
    "is_version_supported",
    "known_instance_types",
    "minimum_version",
    "price_region",
    "supported_versions",
    "training_instance_types",
]

INSTANCE_LIBRARIES = frozenset({"smddp", "smp_v1", "smp_v2", "nccl", "neuron"})
ACCELERATOR_KINDS = frozenset({"gpu", "cpu", "trainium", "inferentia"})

_INSTANCES_FILE = "instances.yaml"
_FRAMEWORKS_FILE = "frameworks.yaml"
_INSTANCE_KEYS = frozenset(
    {
        "vcpus",
        "memory_gib",
        "gpus",
        "gpu_model",
        "gpu_memory_gib",
        "gpu_arch",
        "accelerator",
        "accelerators",
        "accelerators_unit",
        "neuron_cores",
        "efa",
        "efa_rdma",
        "efa_interfaces",
        "price_per_hour",
        "price_note",
        "libraries",
        "retired",
        "training",
        "note",
    }
)
_VERSION_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


class CatalogError(ValueError):
    """A catalogue data file is malformed; the message names the file, entry and key."""


@dataclass(frozen=True)
class InstanceInfo:
    """What one SageMaker training instance type offers.

    ``accelerators`` counts the NVIDIA GPUs on GPU instances and the Trainium chips (Neuron
    devices) on Trainium instances. ``bf16``/``tf32`` say whether the instance's NVIDIA GPUs
    support those precisions (Ampere or newer); they are False on CPU and Trainium instances.
    ``libraries`` names the distributed libraries that run there: ``nccl`` on any NVIDIA GPU,
    ``neuron`` on Trainium and Inferentia, and the SageMaker libraries where AWS documents
    support. ``training`` is False for instances CreateTrainingJob does not offer (Inferentia).
    ``efa_rdma`` says whether the EFA supports RDMA read (FI_EFA_USE_DEVICE_RDMA=1 is safe);
    ``efa_interfaces`` is the most EFA interfaces it takes, None where undocumented.
    """

    instance_type: str
    family: str
    vcpus: int
    memory_gib: float
    gpus: int
    gpu_model: str | None
    gpu_memory_gib: float | None
    accelerator: str
    accelerators: int
    efa: bool
    efa_rdma: bool
    efa_interfaces: int | None
    price_per_hour: float | None
    retired: bool
    training: bool
    libraries: frozenset[str]
    bf16: bool
    tf32: bool
    note: str | None


@dataclass(frozen=True)
class _InstanceCatalog:
    date: str
    region: str
    instances: dict[str, InstanceInfo]


@dataclass(frozen=True)
class _FrameworkCatalog:
    date: str
    frameworks: tuple[str, ...]
    libraries: dict[str, dict[str, tuple[str, ...]]]
    features: dict[str, dict[str, str]]


def _read_yaml(file_name: str) -> dict[str, Any]:
    text = resources.files(__name__).joinpath(file_name).read_text(encoding="utf-8")
    data = parse_yaml(text)
    if not isinstance(data, dict):
        raise CatalogError(f"{file_name}: expected a mapping at the top level.")
    return data


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise CatalogError(message)


def _parse_version(version: str) -> tuple[int, int, int | None]:
    match = _VERSION_RE.match(version.strip()) if isinstance(version, str) else None
    if match is None:
        raise ValueError(
            f"Version {version!r} is not a framework version; use major.minor or "
            "major.minor.patch, for example '2.3' or '2.3.0'."
        )
    major, minor, patch = match.groups()
    return int(major), int(minor), None if patch is None else int(patch)


def _version_key(version: str) -> tuple[int, int, int]:
    major, minor, patch = _parse_version(version)
    return major, minor, patch or 0


def _efa_values(where: str, values: dict[str, Any]) -> tuple[bool, int | None]:
    # RDMA must be stated for every EFA instance: guessing it wrong makes libfabric abort.
    efa, rdma, interfaces = values["efa"], values.get("efa_rdma"), values.get("efa_interfaces")
    _require(isinstance(efa, bool), f"{where}: efa {efa!r} must be true or false.")
    _require(not efa or isinstance(rdma, bool), f"{where}: efa_rdma must be true or false.")
    _require(efa or not (rdma or interfaces), f"{where}: efa_rdma/efa_interfaces need efa.")
    _require(
        interfaces is None or (isinstance(interfaces, int) and interfaces >= 1),
        f"{where}: efa_interfaces {interfaces!r} must be a positive integer or null.",
    )
    return bool(rdma), interfaces


def _build_instance(
    instance_type: str, family: str, values: dict[str, Any], architectures: dict[str, Any]
) -> InstanceInfo:
    where = f"{_INSTANCES_FILE}: {instance_type}"
    unknown = set(values) - _INSTANCE_KEYS
    _require(not unknown, f"{where}: unknown keys {sorted(unknown)}.")
    _require(
        instance_type.startswith("ml.") and instance_type.split(".")[1] == family,
        f"{where}: listed under family {family!r} but its name says otherwise.",
    )
    accelerator = values.get("accelerator")
    _require(
        accelerator in ACCELERATOR_KINDS,
        f"{where}: accelerator {accelerator!r} is not one of {sorted(ACCELERATOR_KINDS)}.",
    )
    for key in ("vcpus", "memory_gib", "efa"):
        _require(key in values, f"{where}: missing {key!r}.")
    gpus = int(values.get("gpus", 0))
    if accelerator == "gpu":
        accelerators = int(values.get("accelerators", gpus))
    else:
        accelerators = int(values.get("accelerators", 0))
    libraries = frozenset(values.get("libraries") or ())
    _require(
        libraries <= INSTANCE_LIBRARIES,
        f"{where}: libraries {sorted(libraries - INSTANCE_LIBRARIES)} are not among "
        f"{sorted(INSTANCE_LIBRARIES)}.",
    )
    arch = values.get("gpu_arch")
    bf16 = tf32 = False
    if arch is not None:
        _require(arch in architectures, f"{where}: gpu_arch {arch!r} is not described.")
        bf16 = bool(architectures[arch]["bf16"])
        tf32 = bool(architectures[arch]["tf32"])
    efa_rdma, efa_interfaces = _efa_values(where, values)
    price = values.get("price_per_hour")
    gpu_memory = values.get("gpu_memory_gib")
    return InstanceInfo(
        instance_type=instance_type,
        family=family,
        vcpus=int(values["vcpus"]),
        memory_gib=float(values["memory_gib"]),
        gpus=gpus,
        gpu_model=values.get("gpu_model"),
        gpu_memory_gib=None if gpu_memory is None else float(gpu_memory),
        accelerator=accelerator,
        accelerators=accelerators,
        efa=bool(values["efa"]),
        efa_rdma=efa_rdma,
        efa_interfaces=efa_interfaces,
        price_per_hour=None if price is None else float(price),
        retired=bool(values.get("retired", False)),
        training=bool(values.get("training", True)),
        libraries=libraries,
        bf16=bf16,
        tf32=tf32,
        note=values.get("note"),
    )


@functools.lru_cache(maxsize=1)
def _instance_catalog() -> _InstanceCatalog:
    data = _read_yaml(_INSTANCES_FILE)
    architectures = data.get("gpu_architectures") or {}
    instances: dict[str, InstanceInfo] = {}
    for family, spec in (data.get("families") or {}).items():
        defaults = spec.get("defaults") or {}
        for instance_type, overrides in (spec.get("instances") or {}).items():
            _require(instance_type not in instances, f"{_INSTANCES_FILE}: {instance_type} twice.")
            values = {**defaults, **(overrides or {})}
            instances[instance_type] = _build_instance(instance_type, family, values, architectures)
    _require(bool(instances), f"{_INSTANCES_FILE}: no instance types.")
    return _InstanceCatalog(
        date=str(data["catalog_date"]), region=str(data["price_region"]), instances=instances
    )


def _version_tuple(values: Any, where: str) -> tuple[str, ...]:
    _require(isinstance(values, list), f"{where}: expected a list of versions.")
    for value in values:
        _require(isinstance(value, str), f"{where}: version {value!r} must be a quoted string.")
        try:
            _parse_version(value)
        except ValueError as error:
            raise CatalogError(f"{where}: {error}") from None
    return tuple(sorted(values, key=_version_key))


@functools.lru_cache(maxsize=1)
def _framework_catalog() -> _FrameworkCatalog:
    data = _read_yaml(_FRAMEWORKS_FILE)
    frameworks = tuple(data["frameworks"])
    libraries: dict[str, dict[str, tuple[str, ...]]] = {}
    for library, spec in (data.get("libraries") or {}).items():
        libraries[library] = {}
        for framework in frameworks:
            where = f"{_FRAMEWORKS_FILE}: libraries.{library}.{framework}"
            _require(framework in spec, f"{where}: missing.")
            libraries[library][framework] = _version_tuple(spec[framework]["versions"], where)
    features: dict[str, dict[str, str]] = {}
    for feature, spec in (data.get("features") or {}).items():
        minimum = spec.get("minimum") or {}
        where = f"{_FRAMEWORKS_FILE}: features.{feature}.minimum"
        _require(set(minimum) <= set(frameworks), f"{where}: unknown framework.")
        _version_tuple(list(minimum.values()), where)
        features[feature] = dict(minimum)
    return _FrameworkCatalog(
        date=str(data["catalog_date"]),
        frameworks=frameworks,
        libraries=libraries,
        features=features,
    )


def _check_name(kind: str, name: str, valid: Any) -> None:
    if name not in valid:
        choices = ", ".join(sorted(valid))
        raise ValueError(f"Unknown {kind} {name!r}; valid {kind} names: {choices}.")


def catalog_date() -> str:
    """The date (YYYY-MM-DD) the oldest set of catalogued facts was taken."""
    from smdist.catalog import api, images

    dates = (_instance_catalog().date, _framework_catalog().date, images.catalog_date())
    return min(*dates, api.snapshot_date())


def price_region() -> str:
    """The AWS Region whose on-demand SageMaker training prices ``price_per_hour`` gives."""
    return _instance_catalog().region


def instance(instance_type: str) -> InstanceInfo | None:
    """Facts about ``instance_type`` (with its ``ml.`` prefix), or None when it is unknown."""
    return _instance_catalog().instances.get(instance_type)


def known_instance_types() -> list[str]:
    """Every catalogued instance type, retired ones included, sorted."""
    return sorted(_instance_catalog().instances)


def training_instance_types() -> list[str]:
    """Every instance type CreateTrainingJob accepts (the service model's enum), sorted."""
    from smdist.catalog import api

    return sorted(api.training_instance_types())


def closest_instance_types(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` training instance types (the API's list) that look like ``name``, best first.

    Meant for error messages: ``p3.2xlarge`` suggests ``ml.p3.2xlarge`` because SageMaker
    needs the ``ml.`` prefix.
    """
    import difflib  # only error paths ask for suggestions; keep it off the import path

    candidate = name.strip().lower()
    if n <= 0 or not candidate:
        return []
    if not candidate.startswith("ml."):
        candidate = f"ml.{candidate}"
    known = training_instance_types()
    matches = difflib.get_close_matches(candidate, known, n=n, cutoff=0.6)
    if candidate in known:
        matches = [candidate, *[match for match in matches if match != candidate]]
    return matches[:n]


def supported_versions(library: str, framework: str) -> list[str]:
    """Framework versions ``library`` supports, oldest first (empty when it dropped one)."""
    catalog = _framework_catalog()
    _check_name("library", library, catalog.libraries)
    _check_name("framework", framework, catalog.frameworks)
    return list(catalog.libraries[library][framework])


def _same_release(
    version: tuple[int, int, int | None], listed: tuple[int, int, int | None]
) -> bool:
    if version[:2] != listed[:2]:
        return False
    # A version without a patch level stands for the whole minor release.
    return version[2] is None or listed[2] is None or version[2] == listed[2]


def is_version_supported(library: str, framework: str, version: str) -> bool:
    """Whether ``library`` supports ``framework`` at ``version`` ("2.3" matches any 2.3.x)."""
    wanted = _parse_version(version)
    return any(
        _same_release(wanted, _parse_version(listed))
        for listed in supported_versions(library, framework)
    )


def minimum_version(feature: str, framework: str) -> str | None:
    """The lowest ``framework`` version ``feature`` needs, or None when none is recorded."""
    catalog = _framework_catalog()
    _check_name("feature", feature, catalog.features)
    _check_name("framework", framework, catalog.frameworks)
    return catalog.features[feature].get(framework)


def dlc_versions(framework: str) -> dict[str, list[str]]:
    """SageMaker training DLC versions of ``framework`` mapped to their Python versions."""
    from smdist.catalog import images

    _check_name("framework", framework, _framework_catalog().frameworks)
    repository = images.repository_for(framework)
    return {image.version: list(image.py_versions) for image in images.training_images(repository)}


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, equal to or newer than ``b``.

    A missing patch level counts as 0, so ``compare_versions("2.3", "2.3.0") == 0``.
    """
    key_a, key_b = _version_key(a), _version_key(b)
    return (key_a > key_b) - (key_a < key_b)


def __getattr__(name: str) -> Any:
    # CATALOG_DATE reads the data files on first use, not at import.
    if name == "CATALOG_DATE":
        return catalog_date()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
