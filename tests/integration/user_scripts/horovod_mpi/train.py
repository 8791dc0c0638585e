"""A Horovod (PyTorch) script written for mpirun, as SageMaker's MPI distribution starts it.

It cross-checks Horovod's ranks against Open MPI's own variables, so it runs only where
mpirun started it (horovodrun's Gloo mode sets no OMPI_* variables).
"""

import argparse
import hashlib
import os
from pathlib import Path

import horovod.torch as hvd
import torch


def mpi_ranks() -> tuple[int, int, int]:
    try:
        return (
            int(os.environ["OMPI_COMM_WORLD_RANK"]),
            int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]),
            int(os.environ["OMPI_COMM_WORLD_SIZE"]),
        )
    except KeyError as missing:
        raise SystemExit(f"not started by Open MPI's mpirun: {missing} is not set") from None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    hvd.init()
    ours = (hvd.rank(), hvd.local_rank(), hvd.size())
    if ours != mpi_ranks():
        raise SystemExit(f"horovod (rank, local rank, size) {ours} != Open MPI's {mpi_ranks()}")

    torch.manual_seed(hvd.rank())  # different starting weights: the broadcast must fix them
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size()),
        named_parameters=model.named_parameters(),
    )
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    generator = torch.Generator().manual_seed(7 + hvd.rank())
    for _ in range(args.steps):
        x = torch.randn(8, 3, generator=generator)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(weights.numpy().tobytes()).hexdigest()[:16]
    print(
        f"user-script rank={hvd.rank()} local_rank={hvd.local_rank()} world={hvd.size()} "
        f"weights={digest}",
        flush=True,
    )
    if hvd.rank() == 0:
        model_dir = Path(os.environ.get("SM_MODEL_DIR", "model"))
        model_dir.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), model_dir / "model.pt")


if __name__ == "__main__":
    main()
