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
from typing import Any

from smdist.catalog import compute_capability
from smdist.catalog.data_files import read_data_file

IMAGE_LIBRARIES = frozenset({"smddp", "smp_v1", "smp_v2", "horovod"})
PROCESSORS = ("gpu", "cpu")
_FILE = "images.yaml"
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


class ImageCatalogError(ValueError):
    """``images.yaml`` is malformed; the message names the family, version and key."""


@dataclass(frozen=True)
class TrainingImage:
    """One training container of ``version``, for the listed Python versions: its tag per
    processor (``gpu``, ``cpu``; a ``{py}`` in it is the job's py_version) in ``repository``.

    ``cuda`` is the CUDA version its GPU image's framework was built with, and
    ``compute_capabilities`` the GPUs that build has kernels for (``"12.0+PTX"`` as PyTorch
    writes it); either is None where the catalogue does not know it."""

    repository: str
    framework: str
    version: str
    py_versions: tuple[str, ...]
    libraries: frozenset[str]
    patched: bool
    tags: tuple[tuple[str, str], ...] = ()
    family: str = ""
    cuda: str | None = None
    compute_capabilities: tuple[str, ...] | None = None

    def tag(self, processor: str, py_version: str) -> str | None:
        """The image tag for ``processor`` (gpu/cpu) and ``py_version``; None when there is
        no such image (e.g. a GPU-only library image on a CPU instance)."""
        template = dict(self.tags).get(processor)
        return None if template is None else template.format(version=self.version, py=py_version)

    def runs_on(self, capability: str) -> bool | None:
        """Whether its GPU build has kernels for a GPU of compute ``capability``; None when the
        catalogue does not know what the build carries."""
        if self.compute_capabilities is None:
            return None
        return compute_capability.runs_on(self.compute_capabilities, capability)


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


def _gpu_build(where: str, entry: dict[str, Any]) -> tuple[str | None, tuple[str, ...] | None]:
    """The entry's ``cuda`` and ``compute_capabilities``, checked (each may be absent)."""
    cuda, capabilities = entry.get("cuda"), entry.get("compute_capabilities")
    if cuda is not None and not (isinstance(cuda, str) and _VERSION.match(cuda)):
        raise ImageCatalogError(f"{where}: cuda {cuda!r} must be a quoted version such as 12.1")
    if capabilities is None:
        return cuda, None
    if cuda is None or not isinstance(capabilities, list) or not capabilities:
        raise ImageCatalogError(f"{where}: compute_capabilities needs cuda and a list")
    for capability in capabilities:
        try:
            compute_capability.parse_entry(str(capability))
        except ValueError as error:
            raise ImageCatalogError(f"{where}: {error}") from None
    return cuda, tuple(str(capability) for capability in capabilities)


def _family(repository: str, spec: dict[str, Any]) -> _Family:
    where = f"{_FILE}: families.{repository}"
    patched = set(spec.get("patched") or ())
    images = []
    for version, entry in (spec.get("versions") or {}).items():
        libraries = frozenset(entry.get("libraries") or ())
        if not libraries <= IMAGE_LIBRARIES or not entry.get("py"):
            raise ImageCatalogError(f"{where}.{version}: needs py and known libraries")
        tags = entry.get("tags") or spec.get("tags") or {}
        if not tags or not set(tags) <= set(PROCESSORS):
            raise ImageCatalogError(f"{where}.{version}: needs tags for {', '.join(PROCESSORS)}")
        try:
            major, minor, _ = _key(version)
        except ValueError as error:
            raise ImageCatalogError(f"{where}.{version}: {error}") from None
        cuda, capabilities = _gpu_build(f"{where}.{version}", entry)
        images.append(
            TrainingImage(
                repository=entry.get("repository", repository),
                framework=spec["framework"],
                version=version,
                py_versions=tuple(entry["py"]),
                libraries=libraries,
                patched=f"{major}.{minor}" in patched,
                tags=tuple(sorted(tags.items())),
                family=repository,
                cuda=cuda,
                compute_capabilities=capabilities,
            )
        )
    images.sort(key=lambda image: _key(image.version))
    return _Family(repository, spec["framework"], spec.get("for_library"), tuple(images))


@functools.lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return read_data_file(_FILE)


@functools.lru_cache(maxsize=1)
def _catalog() -> tuple[str, dict[str, _Family]]:
    data = _data()
    families = {name: _family(name, spec) for name, spec in data["families"].items()}
    return str(data["catalog_date"]), families


def catalog_date() -> str:
    return _catalog()[0]


def registry(region: str, family: str = "") -> str | None:
    """``<account>.dkr.ecr.<region>.<domain>`` of the DLC images (of ``family``, which may
    publish from its own account) in ``region``; None if the catalogue knows none there."""
    data = _data()
    registries = data["families"].get(family, {}).get("registries") or data["registries"]
    account = registries["accounts"].get(region)
    if account is None and region in registries["default_regions"]:
        account = registries["default_account"]
    if account is None:
        return None
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{domain}"


def image_uri(image: TrainingImage, processor: str, py_version: str, region: str) -> str | None:
    """The URI of ``image`` for ``processor`` and ``py_version`` in ``region``, or None when
    that image or region has none."""
    host, tag = registry(region, image.family), image.tag(processor, py_version)
    return None if host is None or tag is None else f"{host}/{image.repository}:{tag}"


def newest_supported(family: str) -> TrainingImage | None:
    """The newest image of ``family`` still patched, or None."""
    patched = [image for image in training_images(family) if image.patched]
    return patched[-1] if patched else None


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


@dataclass(frozen=True)
class DlcReference:
    """What an image URI naming a Deep Learning Container says about the image.

    ``family`` is the catalogue family that holds its versions (``pytorch-training`` for the
    repositories ``pytorch-training`` and ``pytorch``); ``version``, ``processor`` (gpu, cpu)
    and ``cuda`` are what its tag states, None where the tag says nothing of it (``latest``,
    a digest)."""

    uri: str
    repository: str
    family: str
    framework: str
    version: str | None
    processor: str | None
    cuda: str | None


_IMAGE_URI = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repository>[a-z0-9._/-]+)(?::(?P<tag>[A-Za-z0-9._-]+))?(?:@sha256:[0-9a-f]+)?$"
)
_TAG_VERSION = re.compile(r"^(\d+\.\d+(?:\.\d+)?)(?:-|$)")
_TAG_CUDA = re.compile(r"(?:^|-)cu(\d+)(\d)(?:-|$)")


@functools.lru_cache(maxsize=1)
def _dlc_registries() -> tuple[frozenset[str], dict[str, str]]:
    """The accounts DLC images are published from, and each DLC repository's family."""
    data = _data()
    accounts, repositories = set(), {}
    for registries in [data["registries"]] + [
        spec["registries"] for spec in data["families"].values() if spec.get("registries")
    ]:
        accounts.add(registries["default_account"])
        accounts.update(registries["accounts"].values())
    for family in _catalog()[1].values():
        repositories[family.repository] = family.repository
        for image in family.images:
            repositories.setdefault(image.repository, family.repository)
    return frozenset(accounts), repositories


def dlc_reference(uri: str) -> DlcReference | None:
    """What ``uri`` says when it names a training DLC repository in one of the DLC registries
    (``763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311-...``);
    None for any other image, a copy in the user's own registry included."""
    match = _IMAGE_URI.match(uri.strip())
    if match is None:
        return None
    accounts, repositories = _dlc_registries()
    repository = match.group("repository")
    if match.group("account") not in accounts or repository not in repositories:
        return None
    family = repositories[repository]
    tag = match.group("tag") or ""
    version = _TAG_VERSION.match(tag)
    cuda = _TAG_CUDA.search(tag)
    words = tag.split("-")
    processor = "gpu" if "gpu" in words or cuda else "cpu" if "cpu" in words else None
    return DlcReference(
        uri=uri,
        repository=repository,
        family=family,
        framework=_catalog()[1][family].framework,
        version=version.group(1) if version else None,
        processor=processor,
        cuda=f"{int(cuda.group(1))}.{cuda.group(2)}" if cuda else None,
    )
