"""A GPU training image whose framework build has no kernels for the instance's GPU.

A CUDA build carries kernels for a list of compute capabilities. CUDA 13 dropped Volta, so the
PyTorch training images 2.9 to 2.13 (CUDA 13.0 and 13.3 builds) cannot run on an ml.p3's V100:
the job starts, the instances are paid for, the image is pulled, and the first CUDA kernel fails
with "no kernel image is available for execution on the device". The same holds for a build
older than a GPU (CUDA 12.6 on a Blackwell B200). The catalogue knows both sides, the instance's
compute capability (``instances.yaml``) and what each image's build carries (``images.yaml``), so
such a job is refused here, naming what would run.

Only for an image the catalogue knows: the one ``code.framework_version`` selects, or a Deep
Learning Container ``code.image_uri`` whose tag names its version. Without a framework_version the
job runs in the catalogue's newest image: a warning then, as for the unpinned version itself.
Nothing here performs I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from smdist import catalog
from smdist.catalog import compute_capability, images
from smdist.checks.catalog import images_carrying
from smdist.checks.images import chosen_image
from smdist.errors import Problem, Severity
from smdist.spec.job import JobSpec

_FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}
_SUGGESTED_INSTANCE_TYPES = 3


@dataclass(frozen=True)
class _Image:
    """The image a job runs in, as far as the catalogue knows it, and how the job names it."""

    image: images.TrainingImage
    named_by: str  # "code.framework_version", "code.image_uri" or "" (the newest, unpinned)


def _job_image(spec: JobSpec) -> _Image | None:
    code = spec.code
    if code.image_uri is not None:
        reference = images.dlc_reference(code.image_uri)
        if reference is None or reference.version is None or reference.processor == "cpu":
            return None
        image = images.find_image(reference.family, reference.version)
        if image is None or (reference.cuda is not None and reference.cuda != image.cuda):
            return None  # a build the catalogue does not describe
        return _Image(image, "code.image_uri")
    framework = code.framework or spec.strategy.framework
    if code.framework is not None and code.framework != spec.strategy.framework:
        return None  # code.framework is refused on its own (checks.validation)
    image = chosen_image(spec)
    if image is None or image.framework != framework:
        return None
    return _Image(image, "code.framework_version" if code.framework_version else "")


def check_gpu_kernels(spec: JobSpec) -> list[Problem]:
    """A refusal when the job's GPU image carries no kernels for the instance's GPU (a warning
    when no framework_version pins the image)."""
    info = spec.cluster.info
    capability = info.gpu_compute_capability if info is not None else None
    if spec.cluster.is_local_mode or capability is None:
        return []
    job_image = _job_image(spec)
    if job_image is None or job_image.image.runs_on(capability) is not False:
        return []
    return [_problem(spec, info, capability, job_image)]


def _problem(
    spec: JobSpec, info: catalog.InstanceInfo, capability: str, job_image: _Image
) -> Problem:
    image = job_image.image
    framework = _FRAMEWORK_NAMES.get(image.framework, image.framework)
    carries = compute_capability.span(image.compute_capabilities or ())
    unpinned = "" if job_image.named_by else "the newest in smdist's catalogue, "
    message = (
        f"{info.instance_type} has {info.gpu_model} GPUs (compute capability {capability}), "
        f"and the {framework} {image.version} training image ({unpinned}CUDA {image.cuda} build) "
        f"carries kernels for compute capability {carries} only: the job would fail at its "
        "first CUDA kernel with 'no kernel image is available for execution on the device'"
    )
    severity: Severity = "error" if job_image.named_by else "warning"
    return Problem(
        "cluster.instance_type",
        message,
        info.instance_type,
        _what_runs(spec, info, capability, job_image),
        severity=severity,
    )


def _what_runs(
    spec: JobSpec, info: catalog.InstanceInfo, capability: str, job_image: _Image
) -> str:
    """The instance types the image runs on, and the newest version that runs on this GPU."""
    image = job_image.image
    choices = []
    fitting = _instance_types_for(image, info.gpus)
    if fitting:
        choices.append(f"an instance type whose GPU it supports, e.g. {', '.join(fitting)}")
    candidates = _candidate_images(spec, job_image)
    versions = [other.version for other in candidates if other.runs_on(capability)]
    if versions:
        framework = _FRAMEWORK_NAMES.get(image.framework, image.framework)
        where = "code.framework_version"
        if job_image.named_by == "code.image_uri":
            where = "code.image_uri of version"
        choices.append(
            f"{where} {versions[-1]} (the newest {framework} training image with kernels for "
            f"compute capability {capability})"
        )
    return "; or ".join(choices) or "a GPU instance type the image supports, or code.image_uri"


def _candidate_images(spec: JobSpec, job_image: _Image) -> list[images.TrainingImage]:
    if job_image.named_by == "code.image_uri":
        return images.training_images(job_image.image.family)
    return images_carrying(spec)


def _instance_types_for(image: images.TrainingImage, gpus: int) -> list[str]:
    """Training instance types with ``gpus`` GPUs the image runs on: the cheapest of each
    family, cheapest first (unpriced last)."""
    cheapest: dict[str, catalog.InstanceInfo] = {}
    for name in catalog.known_instance_types():
        other = catalog.instance(name)
        if (
            other is None
            or not other.training
            or other.retired
            or other.gpus != gpus
            or other.gpu_compute_capability is None
            or not image.runs_on(other.gpu_compute_capability)
        ):
            continue
        known = cheapest.get(other.family)
        if known is None or _price_key(other) < _price_key(known):
            cheapest[other.family] = other
    ranked = sorted(cheapest.values(), key=_price_key)
    return [other.instance_type for other in ranked[:_SUGGESTED_INSTANCE_TYPES]]


def _price_key(info: catalog.InstanceInfo) -> tuple[bool, float, str]:
    price = info.price_per_hour
    return price is None, price or 0.0, info.instance_type


__all__ = ["check_gpu_kernels"]
