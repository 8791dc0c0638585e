"""A script written for the SageMaker PyTorch container, launched by torchrun on each host.

Everything comes from SageMaker's environment: the hosts, this host's name, the train channel,
the model directory, and hyperparameter defaults from SM_HP_*. The train channel holds CSV
files of ``x,y`` rows; every rank fits a line to its share of the rows.
"""

import argparse
import csv
import hashlib
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def hyperparameters() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=int(os.environ.get("SM_HP_EPOCHS", "1")))
    parser.add_argument("--lr", type=float, default=float(os.environ.get("SM_HP_LR", "0.1")))
    parser.add_argument("--batch-size", type=int, default=4)
    return parser.parse_args()  # strict: SageMaker passes exactly the job's hyperparameters


def read_rows(channel: Path) -> torch.Tensor:
    rows = []
    for path in sorted(channel.glob("*.csv")):
        with path.open() as handle:
            rows += [[float(x), float(y)] for x, y in csv.reader(handle)]
    if not rows:
        raise SystemExit(f"no CSV rows in the train channel {channel}")
    return torch.tensor(rows)


def main() -> None:
    args = hyperparameters()
    hosts = json.loads(os.environ["SM_HOSTS"])
    current_host = os.environ["SM_CURRENT_HOST"]
    model_dir = Path(os.environ["SM_MODEL_DIR"])
    channel = Path(os.environ["SM_CHANNEL_TRAIN"])

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    per_host = int(os.environ["LOCAL_WORLD_SIZE"])
    # The launcher numbers the hosts in SM_HOSTS order: algo-1 holds ranks 0..per_host-1.
    if rank // per_host != hosts.index(current_host):
        raise SystemExit(f"rank {rank} runs on {current_host}, host {hosts.index(current_host)}")

    rows = read_rows(channel)[rank::world]
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for _ in range(args.epochs):
        for batch in rows.split(args.batch_size):
            loss = torch.nn.functional.mse_loss(model(batch[:, :1]), batch[:, 1:])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(weights.numpy().tobytes()).hexdigest()[:16]
    print(
        f"user-script host={current_host} rank={rank} world={world} epochs={args.epochs} "
        f"rows={len(rows)} loss={loss.item():.4f} weights={digest}",
        flush=True,
    )
    if current_host == hosts[0] and int(os.environ["LOCAL_RANK"]) == 0:
        torch.save(model.module.state_dict(), model_dir / "model.pth")
        (model_dir / "hyperparameters.json").write_text(json.dumps(vars(args)))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
