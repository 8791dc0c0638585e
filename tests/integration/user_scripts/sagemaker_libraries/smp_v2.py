"""An SMP v2 script as AWS documents it: ``torch.sagemaker`` initialised after the process
group, the model wrapped in FSDP (hybrid sharding as SMP's configuration sets it), the full
state dict gathered on rank 0."""

import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.sagemaker as tsm
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
args, _ = parser.parse_known_args()  # SageMaker also passes --mp_parameters

local_rank = int(os.environ["LOCAL_RANK"])
if torch.cuda.is_available():  # on SageMaker; the emulated hosts run on CPU
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
else:
    device = torch.device("cpu")
dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
tsm.init()
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
model = tsm.transform(model)
model = FSDP(model, device_id=device, use_orig_params=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(args.steps):
    torch.manual_seed(100 * step + rank)
    loss = (model(torch.randn(16, 8, device=device)) - 1.0).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# Every rank takes part in gathering the full state dict; rank 0 saves it.
state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
report = {
    "rank": rank,
    "world": world,
    "initialized": tsm.is_initialized(),
    "hybrid_shard_degree": tsm.state.hybrid_shard_degree,
    "tp_size": tsm.state.tp_size,
    "shard_group_size": dist.get_world_size(model.process_group),  # FSDP's sharding group
}
print("sm-library " + json.dumps(report), flush=True)
if rank == 0:
    torch.save(state, os.path.join(os.environ["SM_MODEL_DIR"], "model.pt"))
dist.barrier()
dist.destroy_process_group()
