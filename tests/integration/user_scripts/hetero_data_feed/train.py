"""AWS's heterogeneous-cluster shape: a CPU ``data`` group prepares batches and serves them over
TCP to a ``gpu`` group whose ranks (started by torchrun) train one model together.

Every process finds its place in SageMaker's variables only: its group
(SM_CURRENT_INSTANCE_GROUP), the groups' hosts (SM_INSTANCE_GROUPS_DICT), its channels, and for
the ``gpu`` ranks torchrun's RANK, WORLD_SIZE and MASTER_ADDR. The ``data`` host reads its
``raw`` channel, the numbers the batches are made of, and serves each request ``<step>`` with
that step's batch until rank 0 says ``done``; each ``gpu`` rank fits ``y = 2x`` on its own
slice of each batch, and the ranks average their gradients every step through rank 0 on
MASTER_ADDR (``--world-port``), so every rank ends with the same weights. Plain Python: what
this job proves is where smdist starts what, and what each host is told, not a framework.

Every process writes what it saw to ``record-<host>-<rank>.json`` in its host's output data
folder, and each rank prints the checksum of its weights.
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
TIMEOUT = 120.0  # seconds a peer may take to start, on a loaded machine


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


def serve(port: int) -> dict:
    """The data group: batches of the raw numbers, one per request, until ``done``."""
    raw = Path(os.environ["SM_CHANNEL_RAW"])
    numbers = [float(x) for f in sorted(raw.iterdir()) for x in f.read_text().split()]
    served = 0
    with socket.create_server(("", port), reuse_port=False) as server:
        server.settimeout(TIMEOUT)
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


def connect(host: str, port: int) -> socket.socket:
    """A connection to ``host``, retried until it listens (it may start later)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return socket.create_connection((host, port), timeout=TIMEOUT)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def fetch(host: str, port: int, message: str) -> str:
    """One request to the data host."""
    with connect(host, port) as sock, sock.makefile("rw") as stream:
        stream.write(message + "\n")
        stream.flush()
        return stream.readline().strip()


class World:
    """The gpu ranks, joined through rank 0 on MASTER_ADDR: ``mean`` averages a list of floats
    over the ranks (rank 0 gathers every rank's, answers each with the mean)."""

    def __init__(self, rank: int, size: int, master: str, port: int) -> None:
        self.rank = rank
        self.streams = []
        if rank == 0:
            with socket.create_server(("", port)) as server:
                server.settimeout(TIMEOUT)
                for _ in range(size - 1):
                    connection, _ = server.accept()
                    connection.settimeout(TIMEOUT)
                    self.streams.append(connection.makefile("rw"))
        else:
            self.streams.append(connect(master, port).makefile("rw"))

    def mean(self, values: list[float]) -> list[float]:
        if self.rank != 0:
            (stream,) = self.streams
            stream.write(json.dumps(values) + "\n")
            stream.flush()
            return json.loads(stream.readline())
        gathered = [values] + [json.loads(stream.readline()) for stream in self.streams]
        averaged = [sum(column) / len(gathered) for column in zip(*gathered, strict=True)]
        for stream in self.streams:
            stream.write(json.dumps(averaged) + "\n")
            stream.flush()
        return averaged


def train(data_host: str, feed_port: int, world_port: int, steps: int) -> dict:
    """The gpu group: each rank on its slice of the data host's batches, gradients averaged."""
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    world = World(rank, size, os.environ["MASTER_ADDR"], world_port)
    weight, bias = 0.5, 0.0
    for step in range(steps):
        batch = json.loads(fetch(data_host, feed_port, str(step)))
        mine = batch[rank::size] or batch[:1]
        errors = [weight * x + bias - 2 * x for x in mine]  # mean squared error on y = 2x
        gradient = [
            sum(2 * e * x for e, x in zip(errors, mine, strict=True)) / len(mine),
            sum(2 * e for e in errors) / len(mine),
        ]
        gradient = world.mean(gradient)
        weight -= 0.001 * gradient[0]
        bias -= 0.001 * gradient[1]
    checksum = hashlib.sha256(repr((weight, bias)).encode()).hexdigest()[:16]
    print(f"rank={rank} weights_checksum={checksum}", flush=True)
    world.mean([0.0])  # a barrier: every rank has fetched its last batch
    if rank == 0:
        fetch(data_host, feed_port, "done")
    return {"checksum": checksum, "world": size}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--feed-port", type=int, required=True)
    parser.add_argument("--world-port", type=int, required=True)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    group = os.environ["SM_CURRENT_INSTANCE_GROUP"]
    groups = json.loads(os.environ["SM_INSTANCE_GROUPS_DICT"])
    data_host = groups[DATA_GROUP]["hosts"][0]
    if group == DATA_GROUP:
        record(serve(args.feed_port))
    elif group == GPU_GROUP:
        record(train(data_host, args.feed_port, args.world_port, args.steps))
    else:
        raise SystemExit(f"unknown instance group {group}")


if __name__ == "__main__":
    main()
