"""An SMDDP script as AWS documents it for the library's modern API (>= 1.4): the smddp
backend is registered by importing torch_smddp; everything else is plain PyTorch DDP."""

import argparse
import json
import os

import smdistributed.dataparallel.torch.torch_smddp  # noqa: F401 - registers "smddp"
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--model-dir", default=os.environ["SM_MODEL_DIR"])
args = parser.parse_args()

dist.init_process_group(backend="smddp")
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ["LOCAL_RANK"])
device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1).to(device))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(args.steps):
    torch.manual_seed(100 * step + rank)  # each rank its own batch
    batch = torch.randn(16, 8, device=device)
    loss = (model(batch) - 1.0).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
weights = model.module.weight.detach().sum().item()
report = {"rank": rank, "world": world, "local_rank": local_rank, "weights": round(weights, 6)}
print("sm-library " + json.dumps(report), flush=True)
if rank == 0:
    torch.save(model.module.state_dict(), os.path.join(args.model_dir, "model.pt"))
dist.barrier()
dist.destroy_process_group()
