"""A DDP script whose every rank saves its own file to the model directory, as many do.

Each rank saves ``model_<rank>.pth`` to SM_MODEL_DIR (its host's ``/opt/ml/model``); the
first process of every host also saves ``config.json`` there, naming its host: a file every
host writes under the same name.
"""

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "/opt/ml/model"))
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(rank)
    for _ in range(args.steps):
        x = torch.rand(8, 4, generator=generator)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    model_dir = Path(args.model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    torch.save(model.module.state_dict(), model_dir / f"model_{rank}.pth")
    if int(os.environ["LOCAL_RANK"]) == 0:
        host = os.environ.get("SM_CURRENT_HOST", "unknown")
        (model_dir / "config.json").write_text(json.dumps({"saved_by": host, "world": world}))
    print(f"rank {rank} of {world} saved model_{rank}.pth", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
