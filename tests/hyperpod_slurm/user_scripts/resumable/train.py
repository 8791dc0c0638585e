"""A SageMaker-style script that checkpoints every step beside its model directory (on
SageMaker /opt/ml/checkpoints, which CheckpointConfig syncs) and resumes from the newest
checkpoint when the job runs again.

Standard library only: requeue and resume are what it proves, not torch. Every rank steps in
time; each step adds the world's size (what an all-reduce of ones would give), so the total
shows a step lost or counted twice; rank 0 checkpoints."""

import json
import os
import time
from pathlib import Path

STEPS = int(os.environ.get("STEPS", "40"))
CHECKPOINTS = Path(os.environ["SM_MODEL_DIR"]).parent / "checkpoints"


def latest():
    found = sorted(CHECKPOINTS.glob("step-*.json"))
    return json.loads(found[-1].read_text()) if found else None


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    state = latest() or {"step": 0, "total": 0.0}
    if rank == 0:
        print(f"resumed from step {state['step']}" if state["step"] else "fresh start", flush=True)
    for step in range(state["step"] + 1, STEPS + 1):
        state = {"step": step, "total": state["total"] + float(world)}
        if rank == 0:
            partial = CHECKPOINTS / f".step-{step:06d}.json"
            partial.write_text(json.dumps(state))
            partial.rename(CHECKPOINTS / f"step-{step:06d}.json")
            print(f"step {step}", flush=True)
        time.sleep(0.5)
    if rank == 0:
        (Path(os.environ["SM_MODEL_DIR"]) / "final.json").write_text(json.dumps(state))
        print(f"done at step {state['step']}", flush=True)


if __name__ == "__main__":
    main()
