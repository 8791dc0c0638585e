"""Ports for jobs on this machine's network come from below the kernel's ephemeral range, where
no outgoing connection can take them between the choice and the rendezvous binding them."""

from __future__ import annotations

import socket

from smdist.backends.local.hosts.shared import ports
from smdist.backends.local.hosts.shared.ports import ephemeral_range, free_ports


def test_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    low, _ = ephemeral_range()
    chosen = free_ports(16)
    assert len(set(chosen)) == 16
    assert all(10_000 <= port < low for port in chosen)
    for port in chosen:
        with socket.socket() as sock:
            sock.bind(("", port))


def test_a_port_in_use_is_never_chosen(monkeypatch) -> None:
    with socket.socket() as busy, socket.socket() as released:
        busy.bind(("", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        # The other candidate: a port free a moment ago (taken - 1 may be another job's).
        released.bind(("", 0))
        spare = released.getsockname()[1]
        released.close()
        # Only the busy port and the spare one to choose from, in that order.
        monkeypatch.setattr(ports, "_LOWEST", min(taken, spare) - 1_000)
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (max(taken, spare) + 1, 65_535))
        monkeypatch.setattr(ports.random, "sample", lambda population, k: [taken, spare])
        assert free_ports(1) == [spare]


def test_without_room_below_the_range_the_kernel_chooses(monkeypatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (10_500, 60_999))
    chosen = free_ports(3)
    assert len(set(chosen)) == 3
