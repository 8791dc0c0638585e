"""How a process ended: an exit code, or the signal that killed it (``Ending``), read from the
statuses launchers and the emulated hosts' init processes report; and how the job's ranks
stood when the job began to stop (``RankProcess``): a rank that is stopped (SIGSTOP) or alive
but silent while the others time out is the one to name, not the rank that noticed."""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smdist.backends.local.processes import proctree

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True)
class Ending:
    """How a process ended: an exit code, or the signal that killed it."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def of_status(cls, status: int) -> Ending:
        """A status as torchrun and Popen report it: negative for a signal."""
        return cls(signal=-status) if status < 0 else cls(code=status)

    @classmethod
    def of_host_exit(cls, code: int) -> Ending:
        """A host's exit code from its init process, which reports signal N as 128 + N."""
        if code < 0:
            return cls(signal=-code)
        if code > 128 and code - 128 in set(signal.valid_signals()):
            return cls(signal=code - 128)
        return cls(code=code)

    @property
    def stopped(self) -> bool:
        return self.signal in STOP_SIGNALS

    def __str__(self) -> str:
        if self.signal is not None:
            return f"killed by {signal_name(self.signal)}"
        return f"exit code {self.code}"


@dataclass(frozen=True)
class RankProcess:
    """A live process of the job when it began to stop: a rank (or, when stopped, any process
    of a host), its pid as its host numbers it, and whether a signal had stopped it."""

    host: str
    rank: int | None
    pid: int
    stopped: bool

    @property
    def where(self) -> str:
        return self.host + (f" rank {self.rank}" if self.rank is not None else "")

    def __str__(self) -> str:
        # /proc says "stopped", not by which signal: SIGSTOP is what stops a process for good.
        state = "is stopped (SIGSTOP)" if self.stopped else "is running"
        return f"{self.where} (pid {self.pid}) {state}"


def rank_processes(
    roots: Mapping[str, int], token: str, rank_hosts: Sequence[str] = ()
) -> tuple[RankProcess, ...]:
    """The job's ranks, and any other stopped process, as they are now: ``roots``, each host's
    first process; ``token``, the variable every process of the job carries; ``rank_hosts``,
    the host of each global rank where one launcher ran every host's ranks (mpirun)."""
    table = proctree.process_table()
    host_of = {
        pid: host
        for host, root in roots.items()
        for pid in [root, *proctree.descendants(root, table)]
    }
    found = []
    for pid in sorted(set(host_of) | set(proctree.processes_with_token(token))):
        parent, state = table.get(pid, (0, "Z"))
        rank = proctree.rank_of(pid)
        if rank is not None and proctree.rank_of(parent) == rank:
            continue  # a rank's own child (a data loader's worker): the rank names it
        host = rank_hosts[rank] if rank is not None and rank < len(rank_hosts) else None
        host = host or host_of.get(pid)
        if host is None or state == "Z" or (rank is None and state != "T"):
            continue
        found.append(RankProcess(host, rank, proctree.own_pid(pid), state == "T"))
    return tuple(found)


def ranks_below(roots: Mapping[str, int], known: set[int]) -> list[RankProcess]:
    """The ranks among the processes below ``roots`` (each host's first process) whose pids
    are not in ``known`` yet (they are added to it): a look cheap enough to take every second
    while a job runs. Other processes are looked at again next time: one just forked shows its
    parent's environment until it execs."""
    table = proctree.process_table()
    found = []
    for host, root in roots.items():
        for pid in proctree.descendants(root, table):
            rank = None if pid in known else proctree.rank_of(pid)
            if rank is not None:
                known.add(pid)
                found.append(RankProcess(host, rank, proctree.own_pid(pid), False))
    return found
