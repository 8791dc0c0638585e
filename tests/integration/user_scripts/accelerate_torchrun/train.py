"""A Hugging Face accelerate training loop, started by torchrun on CPU.

``Accelerator`` reads the ranks torchrun set; ``prepare`` wraps the model for DDP and shards
the data loader; ``save_model`` writes the weights once, from the main process.
"""

import argparse
import hashlib
import os

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    features = torch.randn(64, 5)
    targets = features @ torch.arange(5, dtype=torch.float32).unsqueeze(1)
    loader = DataLoader(TensorDataset(features, targets), batch_size=8, shuffle=True)
    model = torch.nn.Linear(5, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    steps = 0
    for _ in range(args.epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            accelerator.backward(loss)
            optimizer.step()
            steps += 1

    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(weights.numpy().tobytes()).hexdigest()[:16]
    print(
        f"user-script rank={accelerator.process_index} "
        f"local_rank={accelerator.local_process_index} world={accelerator.num_processes} "
        f"steps={steps} weights={digest}",
        flush=True,
    )
    accelerator.wait_for_everyone()
    accelerator.save_model(model, os.environ.get("SM_MODEL_DIR", "model"))
    accelerator.end_training()


if __name__ == "__main__":
    main()
