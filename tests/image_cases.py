"""Catalogue images checked in both SDK environments: every URI smdist builds equals the one
the installed SDK's tables name where they list the version."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from smdist.catalog import images
from smdist.cli.app import main

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


# Where smdist's URI differs from an SDK's on purpose, and why.
_UNLISTED = (
    "the SDK's tables build the tag {v}-<gpu|cpu>-py312, which the DLC release data "
    "(docs/src/data/tensorflow-training/*-sagemaker.yml) does not list; smdist names the "
    "published full tag"
)
DELIBERATE = {
    ("tensorflow-training", version): _UNLISTED.format(v=version)
    for version in ("2.19.0", "2.21.0")
}


def case_id(case: tuple[images.TrainingImage, str, str]) -> str:
    image, processor, region = case
    return f"{image.family}:{image.version}-{processor}-{region}"


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


VERSIONS = [
    (kind, image)
    for kind, family in (("pytorch_ddp", "pytorch-training"), ("mwms", "tensorflow-training"))
    for image in images.training_images(family)
]
VERSION_IDS = [f"{kind}-{image.version}" for kind, image in VERSIONS]


def assert_validate_and_dry_run_agree(
    kind: str, image: images.TrainingImage, role: str, tmp_path: Path, capsys
) -> None:
    """``smdist validate`` and ``smdist submit --dry-run`` give the same verdict for a job on
    ``image``, and an accepted one runs in that very image."""
    path = tmp_path / "job.yaml"
    data = {
        "name": "agree",
        "strategy": {"kind": kind},
        "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        "code": {"framework_version": image.version, "py_version": image.py_versions[-1]},
        "role": role,
        "region": "us-west-2",
    }
    path.write_text(yaml.safe_dump(data))
    validated = main(["validate", str(path)])
    dry = main(["submit", str(path), "--dry-run"])
    assert validated == dry, capsys.readouterr().err
    if dry == 0:
        out = capsys.readouterr().out
        request = json.loads(out[out.index("{") :])["CreateTrainingJob"]
        assert image.version in request["AlgorithmSpecification"]["TrainingImage"]
