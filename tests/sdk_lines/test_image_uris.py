"""smdist's catalogue names every training image as the installed SDK line's own tables do
where they list it, and ``validate`` and ``submit --dry-run`` agree for every catalogued
version: proved under SDK v2 (``sagemaker.image_uris``) and SDK v3 (``sagemaker.core.
image_uris``), whose tables differ in which versions they list."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from smdist.catalog import images
from smdist.cli.app import main

from .conftest import ROLE

REGIONS = ("us-west-2", "eu-central-2", "cn-north-1")
INSTANCE = {"gpu": "ml.p4d.24xlarge", "cpu": "ml.c5.xlarge"}
SMP_DISTRIBUTION = {
    "torch_distributed": {"enabled": True},
    "smdistributed": {"modelparallel": {"enabled": True, "parameters": {}}},
}
Case = tuple[images.TrainingImage, str, str]  # (image, processor, region)


def catalogue_cases() -> list[Case]:
    """(image, processor, region) for every catalogued image that has that processor."""
    cases = []
    for family in ("pytorch-training", "tensorflow-training", "smdistributed-modelparallel"):
        for image in images.training_images(family):
            for processor in images.PROCESSORS:
                if image.tag(processor, image.py_versions[-1]) is None:
                    continue
                cases.extend((image, processor, region) for region in REGIONS)
    return cases


CASES = catalogue_cases()

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


@pytest.fixture(scope="module", autouse=True)
def endpoints_read_once() -> Iterator[None]:
    """Both lines' ``image_uris`` build a botocore endpoint resolver for every URI, reading
    botocore's endpoints file each time (nearly all of a case's CPU time); the module reads it
    once and every case resolves against the same, unchanged data."""
    from smdist.backends.sagemaker import sdk_v3_installed

    if sdk_v3_installed():
        from sagemaker.core import common_utils as utils
    else:
        from smdist.backends.sagemaker.sdk import import_sagemaker

        import_sagemaker()  # v2 without its banner, excepthook and INFO logs
        from sagemaker import utils
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(utils, "_botocore_resolver", functools.cache(utils._botocore_resolver))
        yield


def case_id(case: Case) -> str:
    image, processor, region = case
    return f"{image.family}:{image.version}-{processor}-{region}"


def sdk_uri(image_uris: ModuleType, image: images.TrainingImage, processor: str,
            region: str) -> str | None:  # fmt: skip
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


def line_uri(sdk_line: str, case: Case) -> str | None:
    """``sdk_uri`` from the ``image_uris`` module of SDK ``sdk_line``: the same function, in
    another package."""
    if sdk_line == "v3":
        from sagemaker.core import image_uris

        return sdk_uri(image_uris, *case)
    from smdist.backends.sagemaker.sdk import contained, import_sagemaker

    import_sagemaker()  # v2 without its banner, excepthook and INFO logs, as smdist imports it
    from sagemaker import image_uris

    with contained():
        return sdk_uri(image_uris, *case)


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_catalogue_uri_equals_the_sdks_where_it_lists_the_image(case, sdk_line):
    image, processor, region = case
    expected = line_uri(sdk_line, case)
    if (image.family, image.version) in DELIBERATE:
        assert images.image_uri(image, processor, image.py_versions[-1], region) != expected
        pytest.skip(DELIBERATE[(image.family, image.version)])
    if expected is None:
        pytest.skip(f"SDK {sdk_line}'s tables do not list {image.family} {image.version}")
    assert images.image_uri(image, processor, image.py_versions[-1], region) == expected


VERSIONS = [
    (kind, image)
    for kind, family in (("pytorch_ddp", "pytorch-training"), ("mwms", "tensorflow-training"))
    for image in images.training_images(family)
]


@pytest.mark.parametrize(
    ("kind", "image"), VERSIONS, ids=[f"{kind}-{image.version}" for kind, image in VERSIONS]
)
def test_validate_and_the_dry_run_agree_for_every_catalogued_version(
    kind: str, image: images.TrainingImage, tmp_path: Path, capsys
):
    """``smdist validate`` and ``smdist submit --dry-run`` give the same verdict for a job on
    ``image``, and an accepted one runs in that very image."""
    path = tmp_path / "job.yaml"
    data = {
        "name": "agree",
        "strategy": {"kind": kind},
        "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        "code": {"framework_version": image.version, "py_version": image.py_versions[-1]},
        "role": ROLE,
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
