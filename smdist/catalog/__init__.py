"""Facts about SageMaker instances and framework support, read from dated data files.

Instance types, GPU counts, prices and which framework versions each distributed library supports
change every few months. They live in data files next to this module, each with the date the facts
were taken and their sources: ``instances.yaml`` and ``frameworks.yaml`` (read here),
``images.yaml`` (training containers, ``images.py``) and ``sagemaker_api.json`` (the API's own
limits, ``api.py``). Updating a fact is a data change and every check in smdist reads the same
answer; after editing a YAML file, ``python -m smdist.catalog`` recompiles the JSON twin it is read
through (``data_files.py``). This module only loads, validates and answers questions about that
data (one instance entry is built and checked in ``instance_facts.py``, version strings are read in
``versions.py``); it uses the standard library and PyYAML and nothing else from smdist.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from smdist.catalog import api, images
from smdist.catalog.data_errors import CatalogError
from smdist.catalog.data_errors import require as _require
from smdist.catalog.data_files import read_data_file
from smdist.catalog.instance_facts import ACCELERATOR_KINDS as ACCELERATOR_KINDS
from smdist.catalog.instance_facts import INSTANCE_LIBRARIES as INSTANCE_LIBRARIES
from smdist.catalog.instance_facts import INSTANCES_FILE as _INSTANCES_FILE
from smdist.catalog.instance_facts import InstanceInfo, build_instance
from smdist.catalog.versions import compare_versions, same_release, version_key
from smdist.catalog.versions import parse_version as _parse_version

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
    "refused_request_fields",
    "storage_price_per_gb_month",
    "supported_versions",
    "training_instance_types",
    "unknown_instance_types",
]

_FRAMEWORKS_FILE = "frameworks.yaml"


@dataclass(frozen=True)
class _InstanceCatalog:
    date: str
    region: str
    storage_price: float
    instances: dict[str, InstanceInfo]
    unknown: dict[str, str]  # instance type -> why the catalogue cannot describe it


@dataclass(frozen=True)
class _FrameworkCatalog:
    date: str
    frameworks: tuple[str, ...]
    libraries: dict[str, dict[str, tuple[str, ...]]]
    features: dict[str, dict[str, str]]


def _read_yaml(file_name: str) -> dict[str, Any]:
    data = read_data_file(file_name)
    if not isinstance(data, dict):
        raise CatalogError(f"{file_name}: expected a mapping at the top level.")
    return data


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
            instances[instance_type] = build_instance(instance_type, family, values, architectures)
    _require(bool(instances), f"{_INSTANCES_FILE}: no instance types.")
    return _InstanceCatalog(
        date=str(data["catalog_date"]),
        region=str(data["price_region"]),
        storage_price=float(data["storage_price_per_gb_month"]),
        instances=instances,
        unknown=_unknown_types(data.get("unknown") or {}, instances),
    )


def _unknown_types(groups: dict[str, Any], instances: dict[str, InstanceInfo]) -> dict[str, str]:
    """``unknown:``'s groups as instance type -> reason; each type once, none catalogued."""
    unknown: dict[str, str] = {}
    for group, spec in groups.items():
        where = f"{_INSTANCES_FILE}: unknown.{group}"
        reason = " ".join(str(spec.get("reason") or "").split())
        _require(bool(reason), f"{where}: needs a reason.")
        for instance_type in spec.get("types") or ():
            _require(
                instance_type not in instances and instance_type not in unknown,
                f"{where}: {instance_type} is listed twice.",
            )
            unknown[instance_type] = reason
    return unknown


def _version_tuple(values: Any, where: str) -> tuple[str, ...]:
    _require(isinstance(values, list), f"{where}: expected a list of versions.")
    for value in values:
        _require(isinstance(value, str), f"{where}: version {value!r} must be a quoted string.")
        try:
            _parse_version(value)
        except ValueError as error:
            raise CatalogError(f"{where}: {error}") from None
    return tuple(sorted(values, key=version_key))


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
    dates = (_instance_catalog().date, _framework_catalog().date, images.catalog_date())
    return min(*dates, api.snapshot_date())


def storage_price_per_gb_month() -> float:
    """USD per GB-month of SageMaker training ML storage (general purpose SSD) in the price
    Region."""
    return _instance_catalog().storage_price


def price_region() -> str:
    """The AWS Region whose on-demand SageMaker training prices ``price_per_hour`` gives."""
    return _instance_catalog().region


def instance(instance_type: str) -> InstanceInfo | None:
    """Facts about ``instance_type`` (with its ``ml.`` prefix), or None when it is unknown."""
    return _instance_catalog().instances.get(instance_type)


def known_instance_types() -> list[str]:
    """Every catalogued instance type, retired ones included, sorted."""
    return sorted(_instance_catalog().instances)


def refused_request_fields(instance_type: str) -> frozenset[str]:
    """CreateTrainingJob fields SageMaker refuses for ``instance_type`` (none when unknown)."""
    info = instance(instance_type)
    return info.refused_request_fields if info is not None else frozenset()


def unknown_instance_types() -> dict[str, str]:
    """Training instance types the catalogue cannot describe, each with the reason."""
    return dict(_instance_catalog().unknown)


def training_instance_types() -> list[str]:
    """Every instance type CreateTrainingJob accepts (the service model's enum), sorted."""
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


def is_version_supported(library: str, framework: str, version: str) -> bool:
    """Whether ``library`` supports ``framework`` at ``version`` ("2.3" matches any 2.3.x)."""
    wanted = _parse_version(version)
    return any(
        same_release(wanted, _parse_version(listed))
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
    _check_name("framework", framework, _framework_catalog().frameworks)
    repository = images.repository_for(framework)
    return {image.version: list(image.py_versions) for image in images.training_images(repository)}


def __getattr__(name: str) -> Any:
    # CATALOG_DATE reads the data files on first use, not at import.
    if name == "CATALOG_DATE":
        return catalog_date()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
