"""A DDP script written for plain torchrun: strict flags, RANK / LOCAL_RANK / WORLD_SIZE.

Fits y = 2x - 1 with a one-unit linear layer; every rank draws its own batches.
"""

import argparse
import hashlib
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser(description="tiny DDP regression")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()  # strict: an unknown flag is an error

    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo")
    assert (dist.get_rank(), dist.get_world_size()) == (rank, world)

    torch.manual_seed(0)  # same initial weights everywhere (DDP broadcasts them anyway)
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(1000 + rank)
    for _ in range(args.steps):
        x = torch.rand(args.batch_size, 1, generator=generator)
        loss = torch.nn.functional.mse_loss(model(x), 2 * x - 1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(weights.numpy().tobytes()).hexdigest()[:16]
    print(
        f"user-script rank={rank} local_rank={local_rank} world={world} "
        f"steps={args.steps} weights={digest}",
        flush=True,
    )
    if rank == 0:
        model_dir = Path(os.environ.get("SM_MODEL_DIR", "model"))
        model_dir.mkdir(parents=True, exist_ok=True)
        torch.save(model.module.state_dict(), model_dir / "model.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
