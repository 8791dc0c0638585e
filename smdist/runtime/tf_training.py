"""TensorFlow pieces shared by the TensorFlow entry points (MultiWorkerMirrored and Horovod).

TensorFlow is imported inside the functions, never at module import: this package is
standard-library-only at import time. ``import_tensorflow()`` is the one way in, because the
Keras flavour is decided by an environment variable read when TensorFlow first loads Keras:
TensorFlow >= 2.16 ships Keras 3, whose ``model.fit`` fails under MultiWorkerMirroredStrategy
(keras-team/keras#20585: a PerReplica value cannot be converted to a Tensor), so the entry
points run on tf-keras (Keras 2) through ``TF_USE_LEGACY_KERAS=1``.

Checkpoints are plain ``.npz`` files (model weights, optimizer variables, step): one file, so
they can be written atomically by ``smdist.runtime.checkpoints``, and readable with numpy
alone.

MultiWorkerMirroredStrategy and its collectives live in ``tf_multi_worker``; this module
re-exports them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

from smdist.runtime import checkpoints
from smdist.runtime.frozen_imports import freeze_imported_objects
from smdist.runtime.tf_keras_install import ensure_tf_keras
from smdist.runtime.tf_multi_worker import (
    COMMUNICATION_CHOICES,
    multi_worker_strategy,
    pack_arrays,
    sum_over_replicas,
    unpack_arrays,
    worker_rank,
)

__all__ = [
    "CHECKPOINT_SUFFIX",
    "COMMUNICATION_CHOICES",
    "SAVED_MODEL_VERSION",
    "STOP_VOTES",
    "StopVote",
    "build_classifier",
    "configure_gpus",
    "import_tensorflow",
    "multi_worker_strategy",
    "nothing_left",
    "pack_arrays",
    "prepare_tensorflow_environment",
    "read_training_state",
    "report_checksum",
    "restore_training_state",
    "save_saved_model",
    "say",
    "select_precision",
    "state_arrays",
    "sum_over_replicas",
    "training_state",
    "unpack_arrays",
    "weights_checksum",
    "with_stop_vote",
    "worker_rank",
    "write_training_state",
]

CHECKPOINT_SUFFIX = "npz"
# SageMaker's TensorFlow Serving container loads SavedModels from numbered version folders.
SAVED_MODEL_VERSION = "1"


def say(message: str) -> None:
    """One progress line on stderr, in a single write so launchers never split or mix it."""
    sys.stderr.write(f"smdist: {message}\n")
    sys.stderr.flush()


def prepare_tensorflow_environment(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set the variables TensorFlow reads once, at import. Call before importing tensorflow."""
    environ["TF_USE_LEGACY_KERAS"] = "1"
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # C++ info lines drown the training log


def import_tensorflow() -> Any:
    """``tensorflow``, with ``tf.keras`` being Keras 2: tf-keras on TensorFlow >= 2.16 (installed
    first where the image lacks it), the Keras 2 that TensorFlow <= 2.15 carries on its own."""
    prepare_tensorflow_environment()
    if "tensorflow" not in sys.modules:  # TensorFlow finds tf-keras when it is imported
        ensure_tf_keras(say=say)
    import tensorflow as tf

    # tf-keras's tf.keras has no __version__; the Keras 2 of TensorFlow <= 2.15 says 2.x.
    keras_version = str(getattr(tf.keras, "__version__", ""))
    is_tf_keras = getattr(tf.keras, "__name__", "").startswith("tf_keras")
    if not (is_tf_keras or keras_version.startswith("2.")):
        raise RuntimeError(
            f"tf.keras is Keras {keras_version or '3'}, not Keras 2 (Keras 3 breaks model.fit "
            "under MultiWorkerMirroredStrategy). TensorFlow >= 2.16 needs tf-keras: "
            f"`pip install --no-deps tf-keras=={tf.__version__}`, and nothing may import "
            "tensorflow before import_tensorflow() sets TF_USE_LEGACY_KERAS=1."
        )
    freeze_imported_objects()  # TensorFlow's and Keras's objects live until exit: never walk them
    return tf


def configure_gpus(tf: Any, visible_index: int | None = None) -> list[Any]:
    """Grow GPU memory on demand and, for one-process-per-GPU launchers, show one GPU only."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus and visible_index is not None:
        gpu = gpus[visible_index % len(gpus)]
        tf.config.set_visible_devices(gpu, "GPU")
        gpus = [gpu]
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    return gpus


def select_precision(tf: Any, enabled: bool) -> str:
    """Set the Keras precision policy the local accelerator supports; returns its name.

    bf16 needs no loss scaling and runs at full speed from compute capability 8.0 (A100/H100),
    fp16 with loss scaling from 7.0 (V100/T4); older GPUs and CPUs train in float32.
    """
    gpus = tf.config.list_physical_devices("GPU")
    policy = "float32"
    if gpus and enabled:
        details = tf.config.experimental.get_device_details(gpus[0])
        capability = tuple(details.get("compute_capability") or (0, 0))
        if capability >= (8, 0):
            policy = "mixed_bfloat16"
        elif capability >= (7, 0):
            policy = "mixed_float16"
    if gpus and not enabled:
        # TF32 matmuls are on by default on Ampere and later; "off" means full float32.
        tf.config.experimental.enable_tensor_float_32_execution(False)
    tf.keras.mixed_precision.set_global_policy(policy)
    return policy


def build_classifier(tf: Any, num_features: int, num_classes: int, hidden: int = 64) -> Any:
    """A small MLP; the logits layer stays float32 so the loss is stable under mixed precision."""
    keras = tf.keras
    inputs = keras.Input(shape=(num_features,), name="features")
    hidden_1 = keras.layers.Dense(hidden, activation="relu", name="hidden_1")(inputs)
    hidden_2 = keras.layers.Dense(hidden, activation="relu", name="hidden_2")(hidden_1)
    logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")(hidden_2)
    return keras.Model(inputs, logits, name="classifier")


STOP_VOTES = "stop_votes"


class StopVote:
    """A per-worker flag that every training step sums over all replicas, inside the step.

    A stop (SIGTERM) must take effect at the same step on every worker, or those still
    training wait in a collective for those that left. Summing the flags inside the compiled
    step rides along with the gradient all-reduce instead of adding an eager round trip per
    step. The variable is created outside the strategy's scope: it is this worker's own value,
    not a mirrored one, and it is no part of the model's weights.
    """

    def __init__(self, tf: Any) -> None:
        self._tf = tf
        self._flag = tf.Variable(0.0, trainable=False, dtype=tf.float32, name="smdist_stop")

    def raise_hand(self) -> None:
        self._flag.assign(1.0)

    def tally(self) -> Any:
        """In replica context: how many replicas want to stop."""
        context = self._tf.distribute.get_replica_context()
        return context.all_reduce(self._tf.distribute.ReduceOp.SUM, self._flag.read_value())


def with_stop_vote(tf: Any, model: Any, vote: StopVote) -> Any:
    """The same functional model, whose training step also reports ``vote``'s tally."""

    class VotingModel(tf.keras.Model):
        def train_step(self, data: Any) -> dict[str, Any]:
            logs = super().train_step(data)
            logs[STOP_VOTES] = vote.tally()
            return logs

    return VotingModel(inputs=model.inputs, outputs=model.outputs, name=model.name)


def weights_checksum(arrays: Sequence[Any]) -> str:
    """A short sha256 digest of the weights' bytes: equal on every rank iff the weights are."""
    import numpy as np

    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


def report_checksum(rank: int, arrays: Sequence[Any]) -> None:
    """Every rank prints its checksum (the same line the PyTorch entry points print)."""
    sys.stdout.write(f"smdist: rank={rank} weights_checksum={weights_checksum(arrays)}\n")
    sys.stdout.flush()


def training_state(model: Any, optimizer: Any, step: int) -> dict[str, Any]:
    """Everything a restart needs, as numpy arrays keyed for an ``.npz`` file."""
    import numpy as np

    state = {f"model_{i}": w for i, w in enumerate(model.get_weights())}
    state.update({f"optimizer_{i}": v.numpy() for i, v in enumerate(optimizer.variables)})
    state["step"] = np.asarray(step, dtype=np.int64)
    return state


def write_training_state(path: Path, state: dict[str, Any]) -> None:
    import numpy as np

    # A file object, not a name: np.savez would append ".npz" to a name lacking it.
    with open(path, "wb") as handle:
        np.savez(handle, **state)


def read_training_state(path: Path) -> dict[str, Any]:
    import numpy as np

    with np.load(path) as data:
        return {name: data[name] for name in data.files}


def state_arrays(state: dict[str, Any], prefix: str) -> list[Any]:
    count = sum(1 for name in state if name.startswith(prefix))
    return [state[f"{prefix}{i}"] for i in range(count)]


def restore_training_state(model: Any, optimizer: Any, state: dict[str, Any], source: str) -> int:
    """Load weights and optimizer variables (the optimizer must be built); returns the step."""
    model_arrays = state_arrays(state, "model_")
    optimizer_arrays = state_arrays(state, "optimizer_")
    expected_model = len(model.get_weights())
    expected_optimizer = len(optimizer.variables)
    if len(model_arrays) != expected_model or len(optimizer_arrays) != expected_optimizer:
        raise ValueError(
            f"checkpoint {source} holds {len(model_arrays)} model and {len(optimizer_arrays)} "
            f"optimizer arrays, but this model has {expected_model} and its optimizer "
            f"{expected_optimizer}: it was written by a different model or optimizer; delete it "
            "or point the checkpoint directory elsewhere"
        )
    model.set_weights(model_arrays)
    for variable, value in zip(optimizer.variables, optimizer_arrays):  # lengths checked above
        variable.assign(value)
    return int(state["step"])


def save_saved_model(
    model: Any, model_dir: Path, is_chief: bool, io_device: str | None = None
) -> Path | None:
    """Save a SavedModel once: the chief into ``model_dir/1``; every other worker to a
    temporary directory that is then deleted.

    Under MultiWorkerMirroredStrategy saving runs collective ops, so every worker must save;
    only one copy may land in the model directory that SageMaker uploads. ``io_device``: the
    device that writes every file (ParameterServerStrategy: the variables live on the parameter
    servers, which would otherwise each write their share on their own host's disk).
    """
    if is_chief:
        target = Path(model_dir) / SAVED_MODEL_VERSION
        target.parent.mkdir(parents=True, exist_ok=True)
        options = {}
        if io_device:
            import tensorflow as tf

            options["options"] = tf.saved_model.SaveOptions(experimental_io_device=io_device)
        model.save(str(target), save_format="tf", include_optimizer=False, **options)
        return target
    scratch = tempfile.mkdtemp(prefix="smdist-worker-model-")
    try:
        model.save(scratch, save_format="tf", include_optimizer=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None


def nothing_left(checkpoint_dir: Any, start_step: int, plan: Any, args: Any) -> str:
    """The line for a checkpoint that is already where training would end."""
    limited = args.max_steps and args.max_steps < args.epochs * plan.steps_per_epoch
    return checkpoints.nothing_left_to_train(
        checkpoint_dir,
        start_step,
        plan.epoch_of(max(start_step - 1, 0)) + 1,
        args.epochs,
        args.max_steps if limited else 0,
        suffix=CHECKPOINT_SUFFIX,
    )
