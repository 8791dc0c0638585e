"""An SMP v1 script in the shape of the SageMaker model-parallel tutorials: the data sharded by
the data-parallel rank, a ``@smp.step`` training step with ``model.backward``, the loss
reduced over microbatches, and the full model saved with ``smp.save(..., partial=False)``."""

import argparse
import json
import os

import smdistributed.modelparallel.torch as smp
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--batch-size", type=int, default=8)
args, _ = parser.parse_known_args()  # SageMaker also passes --mp_parameters

smp.init()
torch.manual_seed(0)
features = torch.randn(64, 10)
labels = (features.sum(dim=1) > 0).long()
dataset = TensorDataset(features, labels)
sampler = DistributedSampler(dataset, num_replicas=smp.dp_size(), rank=smp.dp_rank(), shuffle=False)
loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(10, 16)
        self.second = torch.nn.Linear(16, 2)

    def forward(self, x):
        return F.log_softmax(self.second(torch.relu(self.first(x))), dim=1)


model = smp.DistributedModel(Net())
optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))


@smp.step
def train_step(model, data, target):
    output = model(data)
    loss = F.nll_loss(output, target)
    model.backward(loss)
    return loss


seen = []
for _ in range(args.epochs):
    for data, target in loader:
        seen.append(int(data[0, 0].mul(1e4).round().item()))  # which samples this rank got
        optimizer.zero_grad()
        loss = train_step(model, data, target).reduce_mean()
        optimizer.step()

weights = sum(p.detach().sum().item() for p in model.parameters())
report = {
    "rank": smp.rank(),
    "world": smp.size(),
    "local_rank": smp.local_rank(),
    "mp_size": smp.mp_size(),
    "dp_size": smp.dp_size(),
    "rdp_size": smp.rdp_size(),
    "pp_rank": smp.pp_rank(),
    "tp_rank": smp.tp_rank(),
    "dp_rank": smp.dp_rank(),
    "rdp_rank": smp.rdp_rank(),
    "mp_rank": smp.mp_rank(),
    "first_samples": seen[:2],
    "loss": round(float(loss), 6),
    "weights": round(weights, 5),
}
print("sm-library " + json.dumps(report), flush=True)
if smp.dp_rank() == 0:
    model_dir = os.environ["SM_MODEL_DIR"]
    smp.save(model.state_dict(), os.path.join(model_dir, "model.pt"), partial=False)
smp.barrier()
