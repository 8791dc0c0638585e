"""torchrun on a host other than the first, started once the first host's store answers.

Usage: ``python torchrun_when_ready.py HOST PORT SECONDS -- TORCHRUN_ARGS...``

Every host's torchrun imports torch (about a second) and then connects to the rendezvous
store that the first host's torchrun serves on HOST:PORT. When this host gets there first,
torch's connect meets a refused port and waits 250-750 ms (its exponential back-off with
jitter) before trying again, so the whole job starts that much later, on about half of all
starts. This script does the import first, then polls the port every 10 ms (for at most
SECONDS; past that, torch's own retries take over), then runs torchrun in this process,
exactly as ``python -m torch.distributed.run`` does: same arguments, output, signals and
exit code.

Standard library and torch only: it runs from the shipped runtime, as a file.
"""

from __future__ import annotations

import gc
import socket
import sys
import time

POLL_SECONDS = 0.01


def wait_for_port(host: str, port: int, seconds: float) -> bool:
    """Whether ``host:port`` accepted a connection within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((host, port), timeout=1.0).close()
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[3] != "--":
        raise SystemExit(f"usage: {__doc__.splitlines()[2].strip('`')}")
    host, port, seconds, torchrun_args = argv[0], int(argv[1]), float(argv[2]), argv[4:]
    from torch.distributed.run import main as torchrun  # the import is most of the start

    gc.freeze()  # torch's objects live until exit, which then need not walk them (frozen_imports)

    wait_for_port(host, port, seconds)
    sys.argv = ["torchrun", *torchrun_args]
    torchrun()


if __name__ == "__main__":
    main(sys.argv[1:])
