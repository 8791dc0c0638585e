"""A DDP script written against SageMaker's paths, as AWS's own examples are: it reads
nothing from SM_* variables and writes by literal path.

- every rank saves ``/opt/ml/model/rank-<rank>.pt`` (the folder exists on every host);
- the first process of each host makes ``/opt/ml/checkpoints`` (the path SageMaker syncs for
  spot jobs, which no SM_* variable names) and ``/opt/ml/output/tensorboard`` itself, then
  writes a checkpoint and an event file there;
- every rank notes its rank in ``/tmp/opt-ml-paths-ranks`` and ``/dev/shm/opt-ml-paths-ranks``
  (scratch by literal path, as scripts do), and the first process of each host prints which
  ranks it finds there: in a container, only its own host's;
- it prints the host it believes it runs on (``socket.gethostname()``).
"""

import os
import socket

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

CHECKPOINTS = "/opt/ml/checkpoints"
SCRATCH = ("/tmp/opt-ml-paths-ranks", "/dev/shm/opt-ml-paths-ranks")
TENSORBOARD = "/opt/ml/output/tensorboard"


def main() -> None:
    dist.init_process_group("gloo")
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.rand(8, 4)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if local_rank == 0:
            os.makedirs(CHECKPOINTS, exist_ok=True)
            torch.save({"step": step}, f"{CHECKPOINTS}/checkpoint-{rank}.pt")
    if local_rank == 0:
        os.makedirs(TENSORBOARD, exist_ok=True)
        with open(f"{TENSORBOARD}/events.{socket.gethostname()}", "w") as events:
            events.write("loss\n")
    torch.save(model.module.state_dict(), f"/opt/ml/model/rank-{rank}.pt")
    print(f"rank {rank} on {socket.gethostname()} saved /opt/ml/model/rank-{rank}.pt", flush=True)
    for scratch in SCRATCH:
        with open(scratch, "a") as ranks:
            ranks.write(f"{rank}\n")
    dist.barrier()
    if local_rank == 0:
        for scratch in SCRATCH:
            with open(scratch) as ranks:
                found = sorted(int(line) for line in ranks)
            print(f"{socket.gethostname()}: {scratch} holds ranks {found}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
