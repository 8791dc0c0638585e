"""A PyTorch Lightning script using the DDP strategy on CPU, started by torchrun on each host.

Under torchrun Lightning takes the ranks from the environment (its TorchElastic cluster
environment); devices and num_nodes must match what torchrun started, so they are read from
LOCAL_WORLD_SIZE and WORLD_SIZE, as a user adapting a Lightning script to torchrun would.
"""

import argparse
import hashlib
import os
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self, lr: float) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_steps", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    L.seed_everything(0, verbose=False)
    x = torch.rand(128, 2)
    data = DataLoader(TensorDataset(x, x[:, :1] - x[:, 1:]), batch_size=8)
    devices = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    trainer = L.Trainer(
        accelerator="cpu",
        strategy="ddp",
        devices=devices,
        num_nodes=int(os.environ.get("WORLD_SIZE", "1")) // devices,
        max_steps=args.max_steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    model = Regressor(args.lr)
    trainer.fit(model, data)

    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(weights.numpy().tobytes()).hexdigest()[:16]
    print(
        f"user-script rank={trainer.global_rank} local_rank={trainer.local_rank} "
        f"world={trainer.world_size} steps={trainer.global_step} weights={digest}",
        flush=True,
    )
    model_dir = Path(os.environ.get("SM_MODEL_DIR", "model"))
    trainer.save_checkpoint(model_dir / "model.ckpt")  # every rank calls it; rank 0 writes


if __name__ == "__main__":
    main()
