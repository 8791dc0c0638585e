"""A plain-Python script that prints the ready entry points' ``[metrics]`` lines (step, epoch,
loss, samples/s), written by their own ``smdist.runtime.metrics.log_metrics``, and saves a
model: a job for tests of how ``smdist run`` shows a job's metrics, which need no framework.

``--steps`` steps, a line every ``--log_every`` of them; ``model.json`` in SM_MODEL_DIR.
``--model_dir``, which a TensorFlow job's program is given, is accepted and ignored.
"""

import argparse
import json
import os
from pathlib import Path

from smdist.runtime.metrics import log_metrics

STEPS_PER_EPOCH = 4


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--log_every", type=int, default=2)
    parser.add_argument("--model_dir", default=None)  # an S3 URI or /opt/ml/model: unused
    args = parser.parse_args()
    loss = 2.0
    for step in range(1, args.steps + 1):
        loss *= 0.9  # a loss that falls, as training's does
        if step % args.log_every == 0:
            epoch = 1 + (step - 1) // STEPS_PER_EPOCH
            log_metrics(step=step, epoch=epoch, loss=loss, samples_per_sec=1000.0 + step)
    model_dir = Path(os.environ.get("SM_MODEL_DIR", "/opt/ml/model"))
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "model.json").write_text(json.dumps({"steps": args.steps, "loss": loss}))


if __name__ == "__main__":
    main()
