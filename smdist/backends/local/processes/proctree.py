"""Find and stop every process of an emulated host, however it was started (Linux /proc).

Launchers hide processes from their parent: torchrun starts workers in their own session,
Open MPI's remote daemon (``orted --daemonize``) detaches itself, Horovod starts ranks through
ssh. Process groups alone therefore miss some of them. This module reads ``/proc`` instead:

- the process tree (parent links) below a root;
- every process whose environment carries the job's token variable, wherever it ended up.

Stopping follows SageMaker's contract (SIGTERM, then SIGKILL after a grace period) and
delivers SIGTERM to the processes that can act on it: the training processes, and the
launchers that forward it (torchrun). Pure pass-through launchers (mpirun, orted, horovodrun,
ssh, shells) are not signalled first, because they answer SIGTERM by killing their ranks at
once, before a checkpoint can be written; they end when their ranks do, or at SIGKILL time.

Standard library only: the per-host init process imports it by file location.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")

# Programs that only relay: descend past them, signal their children instead.
PASS_THROUGH = frozenset(
    {
        "mpirun",
        "mpiexec",
        "orterun",
        "orted",
        "prted",
        "prterun",
        "prte",
        "horovodrun",
        "horovod.runner.launch",
        "horovod.runner.task_fn",
        "horovod.runner.driver.driver_service",
        "ssh",
        "ssh_stand_in.py",
        "host_init.py",
        "sh",
        "bash",
        "dash",
        "env",
        "smddprun",
    }
)
# Launchers that forward SIGTERM to their workers and wait for them: signal and descend.
FORWARDING = frozenset(
    {
        "torchrun",
        "torch.distributed.run",
        "torch.distributed.launch",
        "launch_torchrun.py",
        "torchrun_when_ready.py",
    }
)
_PYTHON_FLAGS_WITH_VALUE = frozenset({"-W", "-X", "-Q"})


def available() -> bool:
    return (PROC / "self" / "stat").exists()


def parent_of(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of ``pid``, or None when it is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; the fields after the last ')' do not.
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 2:
        return None
    return int(fields[1]), fields[0].decode("ascii", "replace")


def all_pids() -> list[int]:
    try:
        names = os.listdir(PROC)
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit()]


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) for every visible process."""
    table = {}
    for pid in all_pids():
        entry = parent_of(pid)
        if entry is not None:
            table[pid] = entry
    return table


def descendants(root: int, table: dict[int, tuple[int, str]] | None = None) -> list[int]:
    """Every live (non-zombie) process below ``root``, parents before children."""
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    pending = list(children.get(root, []))
    while pending:
        pid = pending.pop(0)
        if table.get(pid, (0, "Z"))[1] != "Z":
            found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def children_of(pid: int, table: dict[int, tuple[int, str]]) -> list[int]:
    return [child for child, (ppid, state) in table.items() if ppid == pid and state != "Z"]


def command_line(pid: int) -> list[str]:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def program_name(argv: list[str]) -> str:
    """What a process runs: ``torch.distributed.run`` for ``python -m ...``, a script's file
    name for ``python script.py``, otherwise the executable's name."""
    if not argv:
        return ""
    executable = os.path.basename(argv[0])
    if not executable.startswith("python"):
        return executable
    index = 1
    while index < len(argv):
        token = argv[index]
        if token == "-m" and index + 1 < len(argv):
            return argv[index + 1]
        if token == "-c":
            return "python -c"
        if token == "--":
            index += 1
            break
        if token in _PYTHON_FLAGS_WITH_VALUE:
            index += 2
            continue
        if token.startswith("-"):
            index += 1
            continue
        break
    return os.path.basename(argv[index]) if index < len(argv) else executable


def has_token(pid: int, token: bytes) -> bool:
    """True when ``pid``'s environment holds ``token`` (``NAME=value``) exactly."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return token in raw.split(b"\0")


def processes_with_token(token: str, exclude: Iterable[int] = ()) -> list[int]:
    """Live processes whose environment carries ``token`` (``NAME=value``)."""
    wanted = token.encode()
    skip = set(exclude) | {os.getpid()}
    found = []
    for pid in all_pids():
        if pid in skip:
            continue
        entry = parent_of(pid)
        if entry is None or entry[1] == "Z":
            continue
        if has_token(pid, wanted):
            found.append(pid)
    return found


def termination_targets(root: int, table: dict[int, tuple[int, str]] | None = None) -> list[int]:
    """The processes below ``root`` that should receive SIGTERM first (see module docstring)."""
    table = process_table() if table is None else table
    targets: list[int] = []
    pending = children_of(root, table)
    while pending:
        pid = pending.pop(0)
        name = program_name(command_line(pid))
        if name in PASS_THROUGH:
            pending.extend(children_of(pid, table))
        elif name in FORWARDING:
            targets.append(pid)
            pending.extend(children_of(pid, table))
        else:
            targets.append(pid)
    return targets


def send(pids: Iterable[int], signum: int) -> None:
    """``signum`` to each of ``pids``; SIGTERM is followed by SIGCONT to a stopped process
    (SIGSTOP, Ctrl-Z), which otherwise keeps the SIGTERM pending until SIGKILL."""
    for pid in pids:
        try:
            os.kill(pid, signum)
            if signum == signal.SIGTERM and is_stopped(pid):
                os.kill(pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass


def is_stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped by a signal (state T), not merely asleep."""
    entry = parent_of(pid)
    return entry is not None and entry[1] == "T"


def environment_value(pid: int, name: str) -> str | None:
    """``name``'s value in ``pid``'s environment as it started, or None."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    wanted = name.encode() + b"="
    for entry in raw.split(b"\0"):
        if entry.startswith(wanted):
            return entry[len(wanted) :].decode("utf-8", "replace")
    return None


def rank_of(pid: int) -> int | None:
    """The global rank a launcher gave ``pid`` (torchrun's RANK with LOCAL_RANK, Open MPI's
    OMPI_COMM_WORLD_RANK), or None for a process that is no rank."""
    value = environment_value(pid, "OMPI_COMM_WORLD_RANK")
    if value is None and environment_value(pid, "LOCAL_RANK") is not None:
        value = environment_value(pid, "RANK")
    return int(value) if value is not None and value.isdigit() else None


def own_pid(pid: int) -> int:
    """``pid`` as its own pid namespace numbers it (what the process itself prints)."""
    try:
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        return pid
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            numbers = line.split()[1:]
            return int(numbers[-1]) if numbers else pid
    return pid


def kill_all(pids: Iterable[int]) -> None:
    send(pids, signal.SIGKILL)
