"""A Keras script for TensorFlow's MultiWorkerMirroredStrategy, as the TF guides write them.

The cluster comes from TF_CONFIG; the SageMaker TensorFlow container also passes
``--model_dir``. Every worker saves (saving is collective under MWMS), the chief into
SM_MODEL_DIR/1 (the layout TensorFlow Serving reads), the others into a scratch directory.
"""

import argparse
import hashlib
import json
import os
import tempfile

# Keras 3 cannot fit under MultiWorkerMirroredStrategy; tf.keras must be Keras 2 (tf-keras).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def is_chief(task: dict, cluster: dict) -> bool:
    if "chief" in cluster:
        return task["type"] == "chief"
    return task["type"] == "worker" and int(task["index"]) == 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps_per_epoch", type=int, default=4)
    parser.add_argument("--model_dir", type=str)  # the container's own; unused here
    args = parser.parse_args()

    tf_config = json.loads(os.environ["TF_CONFIG"])
    cluster, task = tf_config["cluster"], tf_config["task"]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    workers = strategy.num_replicas_in_sync

    rng = np.random.default_rng(0)
    x = rng.random((256, 4), dtype=np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype=np.float32)
    per_worker_batch = 8
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(per_worker_batch * workers)
    with strategy.scope():
        tf.keras.utils.set_random_seed(0)
        model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    history = model.fit(
        dataset, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, verbose=0
    )

    weights = np.concatenate([w.ravel() for w in model.get_weights()])
    digest = hashlib.sha256(weights.tobytes()).hexdigest()[:16]
    print(
        f"user-script task={task['type']}:{task['index']} workers={workers} "
        f"loss={history.history['loss'][-1]:.4f} weights={digest}",
        flush=True,
    )
    chief = is_chief(task, cluster)
    base = os.environ.get("SM_MODEL_DIR", "model") if chief else tempfile.mkdtemp()
    model.save(os.path.join(base, "1"))
    print(f"user-script task={task['type']}:{task['index']} saved chief={chief}", flush=True)


if __name__ == "__main__":
    main()
