"""backend="sagemaker-local" through SDK v2's own local mode (the estimator and LocalSession):
the cases in ``tests/local_mode_cases.py``, run here in the SDK v2 environment."""

from local_mode_cases import *  # noqa: F403 - the shared cases, collected for this SDK line
from local_mode_cases import machine  # noqa: F401 - the fixture
