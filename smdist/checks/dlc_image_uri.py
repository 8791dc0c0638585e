"""An image_uri naming a Deep Learning Container of another framework, or another version.

``code.image_uri`` lifts the catalogue's container rules: a custom image is the user's to know.
A URI naming one of AWS's own training repositories (``pytorch-training``, ``pytorch``,
``tensorflow-training``, ``smdistributed-modelparallel``) in a DLC registry is no custom image,
though: its repository says the framework and its tag the version. A TensorFlow strategy given a
PyTorch image (MWMS with ``pytorch-training:...``) would start and fail at ``import tensorflow``;
a tag saying 2.3.0 beside ``framework_version: 2.8.0`` leaves two answers to which image runs.
Both are refused here, naming both sides. Nothing here performs I/O.
"""

from __future__ import annotations

from smdist.catalog import images
from smdist.catalog.versions import parse_version, same_release
from smdist.errors import Problem
from smdist.spec.job import JobSpec

_FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}


def check_dlc_image_uri(spec: JobSpec) -> list[Problem]:
    """Problems of a DLC ``code.image_uri`` against the strategy's framework and the job's
    framework_version; none for any other image."""
    code = spec.code
    reference = images.dlc_reference(code.image_uri) if code.image_uri else None
    if reference is None:
        return []
    framework = code.framework or spec.strategy.framework
    if reference.framework != framework:
        return [
            Problem(
                "code.image_uri",
                f"names a SageMaker {_name(reference.framework)} training image "
                f"({reference.repository}), but the {spec.strategy.kind} strategy runs "
                f"{_name(framework)}",
                code.image_uri,
                f"a {_name(framework)} training image ({images.repository_for(framework)}), "
                "or code.framework_version without code.image_uri",
            )
        ]
    version = code.framework_version
    if version is None or reference.version is None or _same(version, reference.version):
        return []
    return [
        Problem(
            "code.image_uri",
            f"is the {_name(framework)} {reference.version} training image "
            f"({reference.repository}), but code.framework_version is {version}",
            code.image_uri,
            f"an image of {version}, or code.framework_version {reference.version} "
            "(or leave it out: the image names the version)",
        )
    ]


def _same(version: str, tagged: str) -> bool:
    try:
        return same_release(parse_version(version), parse_version(tagged))
    except ValueError:
        return False


def _name(framework: str) -> str:
    return _FRAMEWORK_NAMES.get(framework, framework)


__all__ = ["check_dlc_image_uri"]
