"""A DDP script that checkpoints as spot-training users do: rank 0 writes ``ckpt_<step>.pt``
straight into the checkpoint directory with torch.save (no temporary name), and every start
resumes from the newest one found there.

The checkpoint directory is SageMaker's ``/opt/ml/checkpoints``: beside SM_MODEL_DIR.
``--slow-write-at`` makes a run that started from scratch write that step's checkpoint slowly:
half of it, then a long pause with the file still open, as a big checkpoint on a slow disk.
"""

import argparse
import io
import os
import re
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

NAME = re.compile(r"^ckpt_(\d+)\.pt$")


def newest(directory: Path) -> Path | None:
    found = sorted(
        (int(m.group(1)), p) for p in directory.glob("ckpt_*.pt") if (m := NAME.match(p.name))
    )
    return found[-1][1] if found else None


def main() -> None:
    model_dir = os.environ.get("SM_MODEL_DIR", "/opt/ml/model")
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--checkpoint-every", type=int, default=2)
    parser.add_argument("--step-seconds", type=float, default=0.5)
    parser.add_argument("--slow-write-at", type=int, default=0)
    parser.add_argument(
        "--checkpoint-dir", default=os.path.join(os.path.dirname(model_dir), "checkpoints")
    )
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    checkpoints = Path(args.checkpoint_dir)
    checkpoints.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start = 0
    found = newest(checkpoints)
    if found is not None:
        state = torch.load(found)
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
        print(f"rank {rank}: resumed from step {start} ({found.name})", flush=True)

    generator = torch.Generator().manual_seed(rank)
    for step in range(start + 1, args.steps + 1):
        x = torch.rand(8, 4, generator=generator)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(args.step_seconds)
        if rank != 0 or step % args.checkpoint_every:
            continue
        state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
        state["step"] = step
        path = checkpoints / f"ckpt_{step}.pt"
        if step == args.slow_write_at and start == 0:
            buffer = io.BytesIO()
            torch.save(state, buffer)
            data = buffer.getvalue()
            with open(path, "wb") as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                print(f"checkpoint step={step}: writing {path.name} slowly", flush=True)
                time.sleep(600)
                handle.write(data[len(data) // 2 :])
        else:
            torch.save(state, path)
        print(f"checkpoint step={step} written: {path.name}", flush=True)
    print(f"rank {rank}: trained to step {args.steps}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
