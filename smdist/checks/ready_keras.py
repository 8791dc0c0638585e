"""The ready TensorFlow scripts need Keras 2, which the 2.16+ training images lack: the script
installs tf-keras from a package index at start (``smdist.runtime.tf_keras_install``), which a
job in network isolation cannot reach. Refused before submit rather than after the image pull.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist.checks.images import chosen_image
from smdist.errors import Problem
from smdist.runtime.tf_keras_install import FIRST_KERAS_3_MINOR, tf_keras_requirement

if TYPE_CHECKING:
    from smdist.spec.job import JobSpec


def check_ready_keras(spec: JobSpec) -> list[Problem]:
    code = spec.code
    framework = code.framework or spec.strategy.framework
    if framework != "tensorflow" or code.entry_point is not None or code.image_uri is not None:
        return []  # the user's own script, or an image smdist cannot see into
    if not spec.network.isolation or spec.cluster.is_local_mode:
        return []
    image = chosen_image(spec)
    if image is None or tf_keras_requirement(image.version) is None:
        return []  # TensorFlow's own Keras 2
    return [
        Problem(
            "network.isolation",
            f"the TensorFlow {image.version} training image has Keras 3 only, and smdist's "
            f"ready {spec.entry_point} needs Keras 2: it installs tf-keras from a package "
            "index at start, which network isolation cuts off",
            True,
            f"false; or code.framework_version < 2.{FIRST_KERAS_3_MINOR}; or code.image_uri "
            "of an image that has tf-keras",
        )
    ]
