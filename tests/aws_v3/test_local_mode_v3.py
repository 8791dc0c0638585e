"""backend="sagemaker-local" through SDK v3's own local mode (ModelTrainer in LOCAL_CONTAINER
mode): the cases in ``tests/local_mode_cases.py``, run here in the SDK v3 environment."""

from local_mode_cases import *  # noqa: F403 - the shared cases, collected for this SDK line
from local_mode_cases import machine  # noqa: F401 - the fixture
