"""An SMDDP script in the library's older API, as AWS's earlier examples write it: the
library's own distributed module and DistributedDataParallel class."""

import argparse
import json
import os

import smdistributed.dataparallel.torch.distributed as dist
import torch
from smdistributed.dataparallel.torch.parallel.distributed import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()

dist.init_process_group()
rank, world, local_rank = dist.get_rank(), dist.get_world_size(), dist.get_local_rank()
device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1).to(device), device_ids=[local_rank])
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(args.steps):
    torch.manual_seed(100 * step + rank)
    loss = (model(torch.randn(16, 8, device=device)) - 1.0).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
total = torch.tensor([float(rank)])
dist.all_reduce(total, op=dist.ReduceOp.SUM)
weights = model.module.weight.detach().sum().item()
report = {
    "rank": rank,
    "world": world,
    "local_rank": local_rank,
    "local_size": dist.get_local_size(),
    "rank_sum": total.item(),
    "weights": round(weights, 6),
}
print("sm-library " + json.dumps(report), flush=True)
if rank == 0:
    torch.save(model.module.state_dict(), os.path.join(os.environ["SM_MODEL_DIR"], "model.pt"))
dist.barrier()
