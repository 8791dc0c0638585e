"""A rank script, started by torchrun (RANK), that checkpoints as spot-training users do: rank
0 writes ``ckpt_<step>.pt`` straight into the checkpoint directory (no temporary name), and
every start resumes from the newest one found there. Plain Python: what its jobs prove is how
smdist syncs and restores checkpoints, not a framework.

The checkpoint directory is SageMaker's ``/opt/ml/checkpoints``: beside SM_MODEL_DIR.
``--slow-write-at`` makes a run that started from scratch write that step's checkpoint slowly:
half of it, then a long pause with the file still open, as a big checkpoint on a slow disk.
A checkpoint is JSON: one cut short does not load.

At the end every rank saves its model, ``model_<rank>.pth``, to SM_MODEL_DIR (its host's
``/opt/ml/model``), as many DDP scripts do; the first process of every host also saves
``config.json`` there, naming its host: a file every host writes under the same name.
"""

import argparse
import json
import os
import random
import re
import time
from pathlib import Path

NAME = re.compile(r"^ckpt_(\d+)\.pt$")


def newest(directory: Path) -> Path | None:
    found = sorted(
        (int(m.group(1)), p) for p in directory.glob("ckpt_*.pt") if (m := NAME.match(p.name))
    )
    return found[-1][1] if found else None


def main() -> None:
    model_dir = os.environ.get("SM_MODEL_DIR", "/opt/ml/model")
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--checkpoint-every", type=int, default=2)
    parser.add_argument("--step-seconds", type=float, default=0.5)
    parser.add_argument("--slow-write-at", type=int, default=0)
    parser.add_argument(
        "--checkpoint-dir", default=os.path.join(os.path.dirname(model_dir), "checkpoints")
    )
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    checkpoints = Path(args.checkpoint_dir)
    checkpoints.mkdir(parents=True, exist_ok=True)
    weight, start = 0.0, 0
    found = newest(checkpoints)
    if found is not None:
        state = json.loads(found.read_text())  # a half-written checkpoint fails here
        weight, start = state["weight"], state["step"]
        print(f"rank {rank}: resumed from step {start} ({found.name})", flush=True)

    samples = random.Random(rank)
    for step in range(start + 1, args.steps + 1):
        x = samples.random()
        weight -= 0.1 * 2 * (weight * x - 2 * x) * x  # one step towards y = 2x
        time.sleep(args.step_seconds)
        if rank != 0 or step % args.checkpoint_every:
            continue
        data = json.dumps({"weight": weight, "step": step}).encode()
        path = checkpoints / f"ckpt_{step}.pt"
        if step == args.slow_write_at and start == 0:
            with open(path, "wb") as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                print(f"checkpoint step={step}: writing {path.name} slowly", flush=True)
                time.sleep(600)
                handle.write(data[len(data) // 2 :])
        else:
            path.write_bytes(data)
        print(f"checkpoint step={step} written: {path.name}", flush=True)
    print(f"rank {rank}: trained to step {args.steps}", flush=True)

    models = Path(model_dir)
    models.mkdir(parents=True, exist_ok=True)
    (models / f"model_{rank}.pth").write_text(json.dumps({"weight": weight}))
    if int(os.environ["LOCAL_RANK"]) == 0:
        host = os.environ.get("SM_CURRENT_HOST", "unknown")
        world = int(os.environ["WORLD_SIZE"])
        (models / "config.json").write_text(json.dumps({"saved_by": host, "world": world}))


if __name__ == "__main__":
    main()
