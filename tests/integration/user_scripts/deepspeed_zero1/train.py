"""A DeepSpeed ZeRO stage 1 script, started by torchrun (not the deepspeed launcher), on CPU.

With no GPU DeepSpeed picks its CPU accelerator and talks over gloo. SGD is not one of
DeepSpeed's tested ZeRO optimizers, hence ``zero_allow_untested_optimizer``.
"""

import argparse
import hashlib
import os
from pathlib import Path

import deepspeed
import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    # The deepspeed launcher passes --local_rank; torchrun sets LOCAL_RANK instead.
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    config = {
        "train_micro_batch_size_per_gpu": 8,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": 1},
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 1000,
    }
    engine, _, _, _ = deepspeed.initialize(
        model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=args.lr),
        config=config,
    )
    rank, world = engine.global_rank, engine.world_size
    generator = torch.Generator().manual_seed(100 + rank)
    for _ in range(args.steps):
        x = torch.randn(8, 6, generator=generator)
        loss = torch.nn.functional.mse_loss(engine(x), x[:, :1] * 2)
        engine.backward(loss)
        engine.step()

    weights = torch.cat([p.detach().flatten() for p in engine.module.parameters()])
    digest = hashlib.sha256(weights.float().numpy().tobytes()).hexdigest()[:16]
    print(
        f"user-script rank={rank} local_rank={args.local_rank} world={world} "
        f"steps={engine.global_steps} weights={digest}",
        flush=True,
    )
    if rank == 0:
        model_dir = Path(os.environ.get("SM_MODEL_DIR", "model"))
        model_dir.mkdir(parents=True, exist_ok=True)
        torch.save(engine.module.state_dict(), model_dir / "model.pt")
    torch.distributed.barrier()


if __name__ == "__main__":
    main()
