"""With SDK v3 installed: smdist's catalogue names every image as v3's tables do where they
list it, and ``validate`` and ``submit --dry-run`` agree for every catalogued version."""

from __future__ import annotations

import json

import pytest
import yaml
from image_cases import catalogue_cases, sdk_uri

from smdist.catalog import images
from smdist.cli import main

from .conftest import ROLE

CASES = catalogue_cases()


def _id(case) -> str:
    image, processor, region = case
    return f"{image.family}:{image.version}-{processor}-{region}"


@pytest.mark.parametrize("case", CASES, ids=[_id(case) for case in CASES])
def test_catalogue_uri_equals_sdk_v3s_where_it_lists_the_image(case):
    from sagemaker.core import image_uris

    image, processor, region = case
    expected = sdk_uri(image_uris, image, processor, region)
    if expected is None:
        pytest.skip(f"SDK v3's tables do not list {image.family} {image.version}")
    assert images.image_uri(image, processor, image.py_versions[-1], region) == expected


VERSIONS = [
    (kind, image)
    for kind, family in (("pytorch_ddp", "pytorch-training"), ("mwms", "tensorflow-training"))
    for image in images.training_images(family)
]


@pytest.mark.parametrize(("kind", "image"), VERSIONS, ids=[f"{k}-{i.version}" for k, i in VERSIONS])
def test_validate_and_the_dry_run_agree_for_every_catalogued_version(kind, image, tmp_path, capsys):
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
