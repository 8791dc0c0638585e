"""A fake Docker CLI (no daemon needed) for running SageMaker SDK local mode in tests.

``install`` puts it on PATH; ``leftovers``, ``calls`` and ``compose_runs`` read what it saw and
what it still holds; ``pytorch_training_image`` is the PyTorch training DLC as a ``FakeImage``.
See ``docker.py``.
"""

from .docker import FakeImage, calls, compose_runs, install, leftovers
from .images import PYTORCH_TRAINING_ENV, pytorch_training_image

__all__ = [
    "PYTORCH_TRAINING_ENV",
    "FakeImage",
    "calls",
    "compose_runs",
    "install",
    "leftovers",
    "pytorch_training_image",
]
