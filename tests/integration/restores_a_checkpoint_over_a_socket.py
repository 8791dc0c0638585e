"""A plain-Python rank under torchrun that restores the newest checkpoint the way a DDP script
does: the main rank (RANK 0) reads it and sends it to its peers, which wait for it.

The main rank accepts every peer's connection first, each peer asking for the weights, and
only then loads the file: a file that is not a pickle makes it raise ``UnpicklingError`` and
exit with the peers' requests unread, so each peer, still waiting, loses its connection with
``ConnectionResetError: Connection reset by peer``, as gloo's peers do.
"""

import os
import pickle
import socket
import time
from pathlib import Path

# Beside torchrun's own store port on the main host.
PORT = int(os.environ["MASTER_PORT"]) + 1


def newest_checkpoint() -> Path | None:
    folder = Path(os.environ["SM_MODEL_DIR"]).parent / "checkpoints"
    found = sorted(folder.glob("checkpoint-*.pt"))
    return found[-1] if found else None


def serve_the_checkpoint(peers: int) -> None:
    with socket.create_server(("0.0.0.0", PORT)) as server:
        connections = [server.accept()[0] for _ in range(peers)]
        checkpoint = newest_checkpoint()
        print(f"rank 0 restores {checkpoint}", flush=True)
        payload = pickle.dumps(
            None if checkpoint is None else pickle.loads(checkpoint.read_bytes())
        )
        for connection in connections:
            with connection:
                connection.sendall(payload)


def wait_for_the_checkpoint() -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            connection = socket.create_connection((os.environ["MASTER_ADDR"], PORT))
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with connection:
        connection.sendall(b"weights, please")
        print(f"rank {os.environ['RANK']} waits for the weights", flush=True)
        received = b""
        while chunk := connection.recv(1 << 16):
            received += chunk
    print(f"rank {os.environ['RANK']} restored {pickle.loads(received)!r}", flush=True)


if __name__ == "__main__":
    if os.environ["RANK"] == "0":
        serve_the_checkpoint(int(os.environ["WORLD_SIZE"]) - 1)
    else:
        wait_for_the_checkpoint()
