"""A training script written for SageMaker, in the style of AWS's examples: its directories
and cluster from the SM_* variables, its hyperparameters as arguments, torch.distributed
started by torchrun. It knows nothing of Slurm."""

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist


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


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    values = [float(line) for line in (Path(args.train) / "values.txt").read_text().split()]
    shard = torch.tensor(values[rank::world]).sum()
    weight = torch.zeros(1)
    for _ in range(args.epochs):
        total = shard.clone()
        dist.all_reduce(total)
        weight += args.learning_rate * total
    print(f"rank {rank} of {world} on {args.current_host}: weight {weight.item():g}", flush=True)
    if int(os.environ["LOCAL_RANK"]) == 0:  # one file per host, as SageMaker scripts keep apart
        seen = {
            "hosts": args.hosts,
            "current_host": args.current_host,
            "num_gpus": args.num_gpus,
            "hps": json.loads(os.environ["SM_HPS"]),
            "training_env_hosts": json.loads(os.environ["SM_TRAINING_ENV"])["hosts"],
            "world": world,
            "weight": weight.item(),
        }
        path = Path(args.model_dir) / f"seen-{args.current_host}.json"
        path.write_text(json.dumps(seen))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
