"""A training script written for SageMaker, in the style of AWS's examples: its directories
and cluster from the SM_* variables, its hyperparameters as arguments, its rank and world from
torchrun. It knows nothing of Slurm.

Standard library only: the contract is what it proves, not torch. Its ranks add up their shards
through the job's shared model folder (each writes its sum, then reads everyone's), so every
rank's weight shows that every shard was read on some node."""

import argparse
import json
import os
import time
from pathlib import Path

MEET_TIMEOUT = 300  # seconds for every rank's shard to appear (a busy machine starts them late)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--model-dir", type=str, default=os.environ["SM_MODEL_DIR"])
    parser.add_argument("--train", type=str, default=os.environ["SM_CHANNEL_TRAINING"])
    parser.add_argument("--hosts", type=json.loads, default=os.environ["SM_HOSTS"])
    parser.add_argument("--current-host", type=str, default=os.environ["SM_CURRENT_HOST"])
    parser.add_argument("--num-gpus", type=int, default=int(os.environ["SM_NUM_GPUS"]))
    return parser.parse_args()


def all_sum(folder: Path, rank: int, world: int, value: float) -> float:
    """The sum of every rank's ``value``, met in ``folder`` (shared by every node)."""
    partial = folder / f".shard-{rank}.json"
    partial.write_text(json.dumps(value))
    partial.rename(folder / f"shard-{rank}.json")
    deadline = time.monotonic() + MEET_TIMEOUT
    while len(found := sorted(folder.glob("shard-*.json"))) < world:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(found)} of {world} ranks' shards in {folder}")
        time.sleep(0.2)
    return sum(json.loads(path.read_text()) for path in found)


def main():
    args = parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    values = [float(line) for line in (Path(args.train) / "values.txt").read_text().split()]
    total = all_sum(Path(args.model_dir), rank, world, sum(values[rank::world]))
    weight = 0.0
    for _ in range(args.epochs):
        weight += args.learning_rate * total
    print(f"rank {rank} of {world} on {args.current_host}: weight {weight:g}", flush=True)
    if int(os.environ["LOCAL_RANK"]) == 0:  # one file per host, as SageMaker scripts keep apart
        seen = {
            "hosts": args.hosts,
            "current_host": args.current_host,
            "num_gpus": args.num_gpus,
            "hps": json.loads(os.environ["SM_HPS"]),
            "training_env_hosts": json.loads(os.environ["SM_TRAINING_ENV"])["hosts"],
            "world": world,
            "weight": weight,
        }
        path = Path(args.model_dir) / f"seen-{args.current_host}.json"
        path.write_text(json.dumps(seen))


if __name__ == "__main__":
    main()
