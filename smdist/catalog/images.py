"""SageMaker training containers: which framework versions exist, and what each one carries.

A job without ``code.image_uri`` runs in the Deep Learning Container its framework_version and
py_version select; the distributed library its strategy needs (smddp, SMP, Horovod) must be
installed there. The facts live in ``images.yaml`` with their sources and date; this module
loads them and answers lookups.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from smdist.yaml_text import parse_yaml

IMAGE_LIBRARIES = frozenset({"smddp", "smp_v1", "smp_v2", "horovod"})
_FILE = "images.yaml"
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


class ImageCatalogError(ValueError):
    """``images.yaml`` is malformed; the message names the family, version and key."""


@dataclass(frozen=True)
class TrainingImage:
    """One training container: ``repository:version`` for the listed Python versions."""

    repository: str
    framework: str
    version: str
    py_versions: tuple[str, ...]
    libraries: frozenset[str]
    patched: bool


@dataclass(frozen=True)
class _Family:
    repository: str
    framework: str
    for_library: str | None
    images: tuple[TrainingImage, ...]


def _key(version: str) -> tuple[int, int, int]:
    match = _VERSION.match(version)
    if match is None:
        raise ValueError(f"{version!r} is not a version such as 2.3 or 2.3.0")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def _family(repository: str, spec: dict[str, Any]) -> _Family:
    where = f"{_FILE}: families.{repository}"
    patched = set(spec.get("patched") or ())
    images = []
    for version, entry in (spec.get("versions") or {}).items():
        libraries = frozenset(entry.get("libraries") or ())
        if not libraries <= IMAGE_LIBRARIES or not entry.get("py"):
            raise ImageCatalogError(f"{where}.{version}: needs py and known libraries")
        try:
            major, minor, _ = _key(version)
        except ValueError as error:
            raise ImageCatalogError(f"{where}.{version}: {error}") from None
        images.append(
            TrainingImage(
                repository=repository,
                framework=spec["framework"],
                version=version,
                py_versions=tuple(entry["py"]),
                libraries=libraries,
                patched=f"{major}.{minor}" in patched,
            )
        )
    images.sort(key=lambda image: _key(image.version))
    return _Family(repository, spec["framework"], spec.get("for_library"), tuple(images))


@functools.lru_cache(maxsize=1)
def _catalog() -> tuple[str, dict[str, _Family]]:
    text = resources.files(__package__).joinpath(_FILE).read_text(encoding="utf-8")
    data = parse_yaml(text)
    families = {name: _family(name, spec) for name, spec in data["families"].items()}
    return str(data["catalog_date"]), families


def catalog_date() -> str:
    return _catalog()[0]


def repository_for(framework: str, library: str | None = None) -> str:
    """The image repository the SDK uses for ``framework`` (and a library with its own image)."""
    families = _catalog()[1].values()
    for family in families:
        if family.framework == framework and library and family.for_library == library:
            return family.repository
    for family in families:
        if family.framework == framework and family.for_library is None:
            return family.repository
    raise ValueError(f"no training image family for framework {framework!r}")


def training_images(repository: str) -> list[TrainingImage]:
    """Every image of ``repository`` (e.g. pytorch-training), oldest first."""
    return list(_catalog()[1][repository].images)


def find_image(repository: str, version: str) -> TrainingImage | None:
    """The image ``version`` selects: exact, or the newest patch release of ``major.minor``."""
    try:
        wanted = _key(version)
    except ValueError:
        return None
    shorthand = _VERSION.match(version).group(3) is None  # type: ignore[union-attr]
    found = None
    for image in training_images(repository):
        key = _key(image.version)
        if key == wanted or (shorthand and key[:2] == wanted[:2]):
            found = image
    return found


def patched_versions(repository: str) -> list[str]:
    """The versions of ``repository`` that still get security patches."""
    return [image.version for image in training_images(repository) if image.patched]
