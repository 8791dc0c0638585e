"""With SDK v2 installed: smdist's catalogue names every image as v2's tables do where they
list it, and ``validate`` and ``submit --dry-run`` agree for every catalogued version."""

from __future__ import annotations

import pytest
from image_cases import (
    DELIBERATE,
    VERSION_IDS,
    VERSIONS,
    assert_validate_and_dry_run_agree,
    case_id,
    catalogue_cases,
    sdk_uri,
)

from smdist.catalog import images

from .conftest import ROLE

CASES = catalogue_cases()


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_catalogue_uri_equals_sdk_v2s_where_it_lists_the_image(case):
    from smdist.backends.sagemaker.sdk import contained, import_sagemaker

    import_sagemaker()
    from sagemaker import image_uris

    image, processor, region = case
    with contained():
        expected = sdk_uri(image_uris, image, processor, region)
    if (image.family, image.version) in DELIBERATE:
        assert images.image_uri(image, processor, image.py_versions[-1], region) != expected
        pytest.skip(DELIBERATE[(image.family, image.version)])
    if expected is None:
        pytest.skip(f"SDK v2's tables do not list {image.family} {image.version}")
    assert images.image_uri(image, processor, image.py_versions[-1], region) == expected


@pytest.mark.parametrize(("kind", "image"), VERSIONS, ids=VERSION_IDS)
def test_validate_and_the_dry_run_agree_for_every_catalogued_version(kind, image, tmp_path, capsys):
    assert_validate_and_dry_run_agree(kind, image, ROLE, tmp_path, capsys)
