"""The ready TensorFlow scripts need Keras 2, which the 2.16+ training images lack: the script
installs tf-keras from a package index at start (``smdist.runtime.tf_keras_install``), which a
job in network isolation cannot reach. Refused before submit rather than after the image pull.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist import catalog
from smdist.checks.images import chosen_image
from smdist.errors import Problem

if TYPE_CHECKING:
    from smdist.spec.job import JobSpec

FIRST_KERAS_3_VERSION = "2.16"


def check_ready_keras(spec: JobSpec) -> list[Problem]:
    code = spec.code
    framework = code.framework or spec.strategy.framework
    if framework != "tensorflow" or code.entry_point is not None or code.image_uri is not None:
        return []  # the user's own script, or an image smdist cannot see into
    if not spec.network.isolation or spec.cluster.is_local_mode:
        return []
    image = chosen_image(spec)
    if image is None or catalog.compare_versions(image.version, FIRST_KERAS_3_VERSION) < 0:
        return []
    return [
        Problem(
            "network.isolation",
            f"the TensorFlow {image.version} training image has Keras 3 only, and smdist's "
            f"ready {spec.entry_point} needs Keras 2: it installs tf-keras from a package "
            "index at start, which network isolation cuts off",
            True,
            f"false; or code.framework_version < {FIRST_KERAS_3_VERSION}; or code.image_uri "
            "of an image that has tf-keras",
        )
    ]
