"""Which training image a SageMaker job runs in, and its URI, from smdist's dated catalogue.

Both SDK lines name the image from their own tables, which go stale at different speeds (in
November 2026 SDK v2's stop at PyTorch 2.8, v3 3.27's at 2.10, and neither has the Amazon Linux
2023 line of 2.11-2.13), so ``validate`` and ``submit`` disagreed with each other and between
SDK lines. smdist builds the URI itself from ``catalog/images.yaml`` (registry account per
region, tag per image and processor) and hands it to either SDK: one answer everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist import catalog
from smdist.catalog import images
from smdist.checks.catalog import images_carrying, required_library
from smdist.errors import Problem, SpecError

if TYPE_CHECKING:
    from smdist.spec.job import JobSpec


def processor(instance_type: str) -> str | None:
    """``gpu`` or ``cpu`` for the DLC tag of ``instance_type``; None for Trainium/Inferentia."""
    if instance_type in ("local", "local_gpu"):  # SDK local mode
        return "gpu" if instance_type == "local_gpu" else "cpu"
    info = catalog.instance(instance_type)
    if info is None:
        return "gpu" if instance_type.split(".")[1][:1] in ("p", "g") else "cpu"
    return info.accelerator if info.accelerator in images.PROCESSORS else None


def chosen_image(spec: JobSpec) -> images.TrainingImage | None:
    """The catalogue image of ``spec``: its framework_version, or the newest one that carries
    the strategy's library when no version is set (the plan warns that it is not pinned)."""
    if spec.code.framework_version is not None:
        framework = spec.code.framework or spec.strategy.framework
        family = images.repository_for(framework, required_library(spec))
        return images.find_image(family, spec.code.framework_version)
    carrying = images_carrying(spec)
    return carrying[-1] if carrying else None


def training_image_uri(spec: JobSpec, region: str) -> str:
    """``code.image_uri``, or the DLC URI of the chosen image in ``region``; a SpecError naming
    what to set when the catalogue has none."""
    if spec.code.image_uri:
        return spec.code.image_uri
    image = chosen_image(spec)
    kind = processor(spec.cluster.instance_type)
    if image is None or kind is None:
        what = (
            f"no {kind or spec.cluster.instance_type} training image in smdist's catalogue "
            f"({images.catalog_date()}) for this job"
        )
        raise SpecError([Problem("code.image_uri", f"is needed: {what}", None, "an image URI")])
    py_version = spec.code.py_version or image.py_versions[-1]
    uri = images.image_uri(image, kind, py_version, region)
    if uri is None:
        where = (
            "region" if images.registry(region, image.family) is None else "cluster.instance_type"
        )
        value = region if where == "region" else spec.cluster.instance_type
        raise SpecError(
            [
                Problem(
                    where,
                    f"the {image.repository}:{image.version} image is not published for it",
                    value,
                    "a region with Deep Learning Containers, a GPU instance for a GPU-only "
                    "image, or code.image_uri",
                )
            ]
        )
    return uri


__all__ = ["chosen_image", "processor", "training_image_uri"]
