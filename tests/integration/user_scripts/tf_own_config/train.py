"""A MultiWorkerMirroredStrategy script that builds its own TF_CONFIG, as the Deep Learning
Containers' own tests do: every host a worker on the same fixed port, named from
``resourceconfig.json``, which it reads by literal path; it saves to ``/opt/ml/model``."""

import json
import os

PORT = 2222

with open("/opt/ml/input/config/resourceconfig.json") as handle:
    resources = json.load(handle)
hosts, current = resources["hosts"], resources["current_host"]
os.environ["TF_CONFIG"] = json.dumps(
    {
        "cluster": {"worker": [f"{host}:{PORT}" for host in hosts]},
        "task": {"type": "worker", "index": hosts.index(current)},
    }
)

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # Keras 3 has no MultiWorkerMirrored support

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
x = np.random.default_rng(0).random((64, 4), dtype=np.float32)
model.fit(x, x.sum(axis=1), batch_size=16, epochs=1, verbose=0)
print(
    f"{current}: trained as worker {hosts.index(current)} of {len(hosts)} on port {PORT}",
    flush=True,
)
model.save(f"/opt/ml/model/{current}.keras")
