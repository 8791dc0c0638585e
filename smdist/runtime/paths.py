"""Where a training script finds its model, checkpoint, data and output directories.

The same script runs in a SageMaker container (``/opt/ml/...`` announced through ``SM_*``
variables), under the local backend (an emulated ``opt/ml`` per host, same variables) and under
plain torchrun / mpirun (no variables: directories under the working directory). SageMaker
announces no variable for checkpoints; they live beside the model directory
(``/opt/ml/checkpoints``), which is what ``checkpoint_s3_uri`` syncs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CHECKPOINT_DIR_ENV = "SMDIST_CHECKPOINT_DIR"


def model_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get("SM_MODEL_DIR") or "model")


def checkpoint_dir(environ: Mapping[str, str] = os.environ) -> Path:
    explicit = environ.get(CHECKPOINT_DIR_ENV)
    if explicit:
        return Path(explicit)
    sm_model_dir = environ.get("SM_MODEL_DIR")
    if sm_model_dir:
        return Path(sm_model_dir).parent / "checkpoints"
    return Path("checkpoints")


def output_data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get("SM_OUTPUT_DATA_DIR") or "output/data")


def channel_dir(name: str, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The directory of input channel ``name``, or None when the job has no such channel."""
    value = environ.get(f"SM_CHANNEL_{name.upper()}")
    return Path(value) if value else None
