"""A DDP script whose training data is on a shared file system (FSx for Lustre, EFS), as a
SageMaker job mounts one: every rank reads every file of its ``train`` channel, trains on its
share of the rows, and records what it could do with its channels.

- ``train`` (SM_CHANNEL_TRAIN): ``*.txt`` files of rows ``x1 x2 x3 x4 y``; the script tries
  to write there too (a read-only channel refuses it);
- ``shared`` (SM_CHANNEL_SHARED, where the job has it): a read-write file system; every rank
  writes ``rank-<rank>-<host>.txt`` there and, after a barrier, lists what all ranks wrote;
- ``--tensorboard literal``: every rank writes an events file to ``/opt/ml/output/tensorboard``
  itself; ``--tensorboard config``: to the folder SageMaker names as ``LocalPath`` in
  ``$SM_INPUT_CONFIG_DIR/tensorboardoutputconfig.json``.

Each rank writes ``report-<rank>.json`` to SM_OUTPUT_DATA_DIR and prints
``file-system-script rank=R weights=<digest>``.
"""

import argparse
import errno
import hashlib
import json
import os
import socket
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def read_rows(channel: Path) -> torch.Tensor:
    rows = []
    for path in sorted(channel.rglob("*.txt")):
        for line in path.read_text().splitlines():
            if line.strip():
                rows.append([float(value) for value in line.split()])
    return torch.tensor(rows)


def try_to_write(channel: Path, rank: int) -> str:
    try:
        (channel / f"written-by-rank-{rank}.txt").write_text("should not be here")
    except OSError as error:
        return errno.errorcode.get(error.errno or 0, str(error))
    return "written"


def tensorboard_folder(how: str) -> Path | None:
    if how == "literal":
        return Path("/opt/ml/output/tensorboard")
    if how == "config":
        config = Path(os.environ["SM_INPUT_CONFIG_DIR"], "tensorboardoutputconfig.json")
        return Path(json.loads(config.read_text())["LocalPath"])
    return None


def train(rows: torch.Tensor, rank: int, world: int, steps: int) -> str:
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    mine = rows[rank::world]
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(mine[:, :4]), mine[:, 4:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    return hashlib.sha256(weights.numpy().tobytes()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tensorboard", choices=["none", "literal", "config"], default="none")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world, host = dist.get_rank(), dist.get_world_size(), socket.gethostname()
    channel = Path(os.environ["SM_CHANNEL_TRAIN"])
    rows = read_rows(channel)
    digest = train(rows, rank, world, args.steps)
    report = {
        "host": os.environ.get("SM_CURRENT_HOST", host),
        "instance_type": os.environ.get("SM_CURRENT_INSTANCE_TYPE"),
        "channel": str(channel),
        "rows": len(rows),
        "write_to_train": try_to_write(channel, rank),
        "input_data_config": json.loads(os.environ["SM_INPUT_DATA_CONFIG"]),
    }
    shared = os.environ.get("SM_CHANNEL_SHARED")
    if shared:
        Path(shared, f"rank-{rank}-{report['host']}.txt").write_text(digest)
    dist.barrier()  # every rank has written its file
    if shared:
        report["shared_files"] = sorted(path.name for path in Path(shared).iterdir())
    board = tensorboard_folder(args.tensorboard)
    if board is not None:
        board.mkdir(parents=True, exist_ok=True)
        (board / f"events.out.tfevents.{rank}.{report['host']}").write_text(digest)
        report["tensorboard"] = str(board)
    output = Path(os.environ["SM_OUTPUT_DATA_DIR"])
    output.mkdir(parents=True, exist_ok=True)
    (output / f"report-{rank}.json").write_text(json.dumps(report))
    print(f"file-system-script rank={rank} weights={digest}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
