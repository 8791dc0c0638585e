"""AWS's heterogeneous-cluster shape: a CPU ``data`` group prepares batches and serves them over
TCP to a ``gpu`` group that trains with DistributedDataParallel.

Every process finds its place in SageMaker's variables only: its group
(SM_CURRENT_INSTANCE_GROUP), the groups' hosts (SM_INSTANCE_GROUPS_DICT) and its channels. The
``data`` host reads its ``raw`` channel, the numbers the batches are made of, and serves each
request ``<step>`` with that step's batch until the first ``gpu`` host says ``done``; each
``gpu`` rank trains on its own slice of each batch. Every process writes what it saw to
``record-<host>-<rank>.json`` in its host's output data folder, and each rank prints the
checksum of its weights.
"""

import argparse
import hashlib
import json
import os
import socket
import time
from pathlib import Path

DATA_GROUP = "data"
GPU_GROUP = "gpu"
GROUP_VARIABLES = (
    "SM_CURRENT_HOST", "SM_HOSTS", "SM_CURRENT_INSTANCE_TYPE", "SM_CURRENT_INSTANCE_GROUP",
    "SM_CURRENT_INSTANCE_GROUP_HOSTS", "SM_INSTANCE_GROUPS", "SM_INSTANCE_GROUPS_DICT",
    "SM_DISTRIBUTION_INSTANCE_GROUPS", "SM_IS_HETERO", "SM_CHANNELS", "SM_NUM_GPUS",
    "MASTER_ADDR", "RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID",
)  # fmt: skip


def record(extra: dict) -> None:
    """What this process saw, for the test to read."""
    host = os.environ["SM_CURRENT_HOST"]
    rank = os.environ.get("RANK", "none")
    data_dir = Path(os.environ.get("SM_INPUT_DIR", "/opt/ml/input")) / "data"
    values = {name: os.environ.get(name) for name in GROUP_VARIABLES}
    values["channel_variables"] = sorted(n for n in os.environ if n.startswith("SM_CHANNEL_"))
    values["channel_folders"] = (
        sorted(p.name for p in data_dir.iterdir()) if data_dir.is_dir() else []
    )
    config = Path(os.environ["SM_INPUT_CONFIG_DIR"]) / "inputdataconfig.json"
    values["inputdataconfig"] = sorted(json.loads(config.read_text()))
    values.update(extra)
    out = Path(os.environ["SM_OUTPUT_DATA_DIR"])
    out.mkdir(parents=True, exist_ok=True)
    (out / f"record-{host}-{rank}.json").write_text(json.dumps(values, indent=1))


def serve(port: int, timeout: float) -> dict:
    """The data group: batches of the raw numbers, one per request, until ``done``."""
    raw = Path(os.environ["SM_CHANNEL_RAW"])
    numbers = [float(x) for f in sorted(raw.iterdir()) for x in f.read_text().split()]
    served = 0
    with socket.create_server(("", port), reuse_port=False) as server:
        server.settimeout(timeout)
        while True:
            connection, _ = server.accept()
            with connection, connection.makefile("rw") as stream:
                request = stream.readline().strip()
                if request == "done":
                    return {"served": served, "raw_numbers": len(numbers)}
                step = int(request)
                batch = [numbers[(step * 8 + i) % len(numbers)] for i in range(8)]
                stream.write(json.dumps(batch) + "\n")
                served += 1


def fetch(host: str, port: int, message: str, deadline: float) -> str:
    """One request to the data host, retried until it answers (it may start later)."""
    while True:
        try:
            with socket.create_connection((host, port), timeout=30) as sock:
                with sock.makefile("rw") as stream:
                    stream.write(message + "\n")
                    stream.flush()
                    return stream.readline().strip()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def train(data_host: str, port: int, steps: int) -> dict:
    """The gpu group: DDP over gloo, each rank on its slice of the data host's batches."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    deadline = time.monotonic() + 120
    for step in range(steps):
        batch = json.loads(fetch(data_host, port, str(step), deadline))
        x = torch.tensor(batch[rank::world] or batch[:1]).unsqueeze(1)
        loss = torch.nn.functional.mse_loss(model(x), 2 * x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    checksum = hashlib.sha256(weights).hexdigest()[:16]
    print(f"rank={rank} weights_checksum={checksum}", flush=True)
    dist.barrier()
    if rank == 0:
        fetch(data_host, port, "done", deadline)
    dist.destroy_process_group()
    return {"checksum": checksum, "world": world}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--feed-port", type=int, required=True)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    group = os.environ["SM_CURRENT_INSTANCE_GROUP"]
    groups = json.loads(os.environ["SM_INSTANCE_GROUPS_DICT"])
    data_host = groups[DATA_GROUP]["hosts"][0]
    if group == DATA_GROUP:
        record(serve(args.feed_port, timeout=120))
    elif group == GPU_GROUP:
        record(train(data_host, args.feed_port, args.steps))
    else:
        raise SystemExit(f"unknown instance group {group}")


if __name__ == "__main__":
    main()
