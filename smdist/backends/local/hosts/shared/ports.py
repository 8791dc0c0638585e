"""Free TCP ports for jobs whose hosts share this machine's network.

A port the kernel hands out for ``bind(0)`` comes from its ephemeral range, the same range it
draws from for every outgoing connection; between choosing the port and the rendezvous
binding it, one of the job's own connections (gloo, the c10d store's clients, another job's)
can take it, and a torchrun whose store cannot bind leaves the other hosts waiting for it.
Ports below that range are never handed out by the kernel, so only another explicit binder
can collide, and a random start makes that unlikely too.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000  # above the well-known and registered services most machines run
_ATTEMPTS = 2_000


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections (Linux's default where it cannot be read)."""
    try:
        low, high = (int(value) for value in _EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that nothing listens on, on any interface, right now, taken
    from below the ephemeral range where it leaves room (else as the kernel hands them out)."""
    low, _ = ephemeral_range()
    sockets: list[socket.socket] = []
    try:
        if low - _LOWEST >= 1_000:
            _bind_below(low, count, sockets)
        while len(sockets) < count:
            sockets.append(_bound(0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _bind_below(low: int, count: int, sockets: list[socket.socket]) -> None:
    for port in random.sample(range(_LOWEST, low), k=min(_ATTEMPTS, low - _LOWEST)):
        if len(sockets) == count:
            return
        try:
            sockets.append(_bound(port))
        except OSError:
            continue


def _bound(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("", port))
    except OSError:
        sock.close()
        raise
    return sock
