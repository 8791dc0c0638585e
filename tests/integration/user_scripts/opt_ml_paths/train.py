"""A script written against SageMaker's paths, as AWS's own examples are: it reads nothing
from SM_* variables and writes by literal path. Plain Python under torchrun (the paths, not
the framework, are what it shows): torchrun's RANK, LOCAL_RANK, WORLD_SIZE and MASTER_ADDR.

- every rank saves ``/opt/ml/model/rank-<rank>.pt`` (the folder exists on every host);
- the first process of each host makes ``/opt/ml/checkpoints`` (the path SageMaker syncs for
  spot jobs, which no SM_* variable names) and ``/opt/ml/output/tensorboard`` itself, then
  writes a checkpoint and an event file there;
- every rank notes its rank in ``/tmp/opt-ml-paths-ranks`` and ``/dev/shm/opt-ml-paths-ranks``
  (scratch by literal path, as scripts do), and once every rank of every host has, the first
  process of each host prints which ranks it finds there: in a container, only its own host's;
- it prints the host it believes it runs on (``socket.gethostname()``).
"""

import json
import os
import socket
import time

CHECKPOINTS = "/opt/ml/checkpoints"
SCRATCH = ("/tmp/opt-ml-paths-ranks", "/dev/shm/opt-ml-paths-ranks")
TENSORBOARD = "/opt/ml/output/tensorboard"


def barrier(rank: int, world_size: int) -> None:
    """Return once every rank has called it: rank 0 answers when all the others have asked."""
    port = int(os.environ["MASTER_PORT"]) + 1  # beside torchrun's store, on the first host
    if rank == 0:
        with socket.create_server(("0.0.0.0", port)) as server:
            peers = [server.accept()[0] for _ in range(world_size - 1)]
            for peer in peers:
                with peer:
                    peer.sendall(b"go")
        return
    deadline = time.monotonic() + 120
    while True:
        try:
            with socket.create_connection((os.environ["MASTER_ADDR"], port)) as server:
                if server.recv(2) == b"go":
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def main() -> None:
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    for step in range(3):
        if local_rank == 0:
            os.makedirs(CHECKPOINTS, exist_ok=True)
            with open(f"{CHECKPOINTS}/checkpoint-{rank}.pt", "w") as checkpoint:
                json.dump({"step": step}, checkpoint)
    if local_rank == 0:
        os.makedirs(TENSORBOARD, exist_ok=True)
        with open(f"{TENSORBOARD}/events.{socket.gethostname()}", "w") as events:
            events.write("loss\n")
    with open(f"/opt/ml/model/rank-{rank}.pt", "w") as weights:
        json.dump({"rank": rank}, weights)
    print(f"rank {rank} on {socket.gethostname()} saved /opt/ml/model/rank-{rank}.pt", flush=True)
    for scratch in SCRATCH:
        with open(scratch, "a") as ranks:
            ranks.write(f"{rank}\n")
    barrier(rank, int(os.environ["WORLD_SIZE"]))
    if local_rank == 0:
        for scratch in SCRATCH:
            with open(scratch) as ranks:
                found = sorted(int(line) for line in ranks)
            print(f"{socket.gethostname()}: {scratch} holds ranks {found}", flush=True)


if __name__ == "__main__":
    main()
