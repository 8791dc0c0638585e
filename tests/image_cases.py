"""Catalogue images checked in both SDK environments: every URI smdist builds equals the one
the installed SDK's tables name where they list the version."""

from __future__ import annotations

from smdist.catalog import images

REGIONS = ("us-west-2", "eu-central-2", "cn-north-1")
INSTANCE = {"gpu": "ml.p4d.24xlarge", "cpu": "ml.c5.xlarge"}
SMP_DISTRIBUTION = {
    "torch_distributed": {"enabled": True},
    "smdistributed": {"modelparallel": {"enabled": True, "parameters": {}}},
}


def catalogue_cases() -> list[tuple[images.TrainingImage, str, str]]:
    """(image, processor, region) for every catalogued image that has that processor."""
    cases = []
    for family in ("pytorch-training", "tensorflow-training", "smdistributed-modelparallel"):
        for image in images.training_images(family):
            for processor in images.PROCESSORS:
                if image.tag(processor, image.py_versions[-1]) is None:
                    continue
                cases.extend((image, processor, region) for region in REGIONS)
    return cases


def sdk_uri(image_uris, image: images.TrainingImage, processor: str, region: str) -> str | None:
    """The URI the SDK's own tables name, or None when they do not list the image."""
    distribution = SMP_DISTRIBUTION if image.family == "smdistributed-modelparallel" else None
    try:
        return image_uris.get_training_image_uri(
            region=region,
            framework=image.framework,
            framework_version=image.version,
            py_version=image.py_versions[-1],
            instance_type=INSTANCE[processor],
            distribution=distribution,
        )
    except ValueError:
        return None
