"""Checkpoints reach the store while the job runs, as SageMaker syncs ``/opt/ml/checkpoints``
with ``checkpoint_s3_uri``: so a re-run after the job's supervisor died (kill -9, OOM, reboot)
resumes from the newest checkpoint that was complete.

A thread of the job's supervising process looks at every host's checkpoint directory once a
second. Each top-level entry there (a file, or a directory such as Hugging Face's
``checkpoint-500/``) is one checkpoint, synced whole. It counts as complete when:

- no name in it is a temporary one (``.tmp-...``: the ready scripts write there and rename;
  ``checkpoint_store.is_temporary``);
- none of its files has changed (size, mtime) for ``SETTLE_SECONDS``;
- no process has one of its files open for writing (``/proc/*/fd``): a script that writes
  directly and pauses mid-file is still writing.

Where hosts hold the same name, the first host's copy is kept (as the end-of-job save always
did). As on SageMaker, an entry every host has deleted is deleted from the store too, but only
in a round that left nothing pending, so a script keeping one checkpoint never leaves the store
without one. The thread dies with its process, so it stops however the job ends; at the end the
job makes one final pass (``finish``) that takes whatever the hosts hold.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.data.checkpoint_store import CheckpointStore, is_temporary, kept_files

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.reports.logs import JobLog

POLL_SECONDS = 1.0
SETTLE_SECONDS = 2.0
_WRITING = (os.O_WRONLY, os.O_RDWR)

# (relative path, size, mtime in ns) of every file of an entry; its identity for the sync.
Signature = tuple[tuple[str, int, int], ...]


def signature(entry: Path) -> tuple[Signature, bool] | None:
    """The entry's files as they are now, and whether any name in it is temporary; None when
    it vanished while being read."""
    try:
        if not entry.is_dir() or entry.is_symlink():
            stat = entry.lstat()
            return (("", stat.st_size, stat.st_mtime_ns),), False
        files, temporary = [], False
        for current, dirnames, filenames in os.walk(entry):
            temporary = temporary or any(is_temporary(name) for name in dirnames + filenames)
            dirnames[:] = sorted(name for name in dirnames if not is_temporary(name))
            for name in sorted(filenames):
                if is_temporary(name):
                    continue
                path = Path(current) / name
                stat = path.lstat()
                files.append((path.relative_to(entry).as_posix(), stat.st_size, stat.st_mtime_ns))
        return tuple(files), temporary
    except OSError:
        return None


def open_for_writing(files: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Those of ``files`` (device, inode) that some process has open for writing (Linux
    ``/proc``). Matched by inode, not path: a process in another mount namespace (a host
    seeing its directory as ``/opt/ml``) names the same file differently."""
    found: set[tuple[int, int]] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or not ours to read
        for fd in descriptors:
            try:
                stat = os.stat(f"/proc/{pid}/fd/{fd}")
                if (stat.st_dev, stat.st_ino) not in files:
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                    flags = next(line for line in info if line.startswith("flags:"))
            except (OSError, StopIteration):
                continue
            if int(flags.split()[1], 8) & os.O_ACCMODE in _WRITING:
                found.add((stat.st_dev, stat.st_ino))
    return found


def inodes(entry: Path) -> set[tuple[int, int]]:
    """(device, inode) of every file of an entry."""
    paths = [entry] if not entry.is_dir() else [p for p in entry.rglob("*") if p.is_file()]
    found = set()
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue
        found.add((stat.st_dev, stat.st_ino))
    return found


class CheckpointSync:
    """Syncs the hosts' checkpoint directories into a ``CheckpointStore``, live and at the end."""

    def __init__(
        self,
        store: CheckpointStore,
        hosts: list[EmulatedHost],
        log: JobLog,
        poll: float = POLL_SECONDS,
        settle: float = SETTLE_SECONDS,
    ) -> None:
        self.store = store
        self.hosts = hosts
        self.log = log
        self.poll = poll
        self.settle = settle
        self._seen: dict[str, tuple[Signature, float]] = {}  # entry -> as first seen, when
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed = False  # a round failed, and the log said so
        # Complete checkpoints the last round could not copy, with their host and why.
        self.unkept: dict[str, tuple[EmulatedHost, OSError]] = {}

    def start(self) -> None:
        # Daemon: it must never keep the process alive; the job stops it before its final pass.
        self._thread = threading.Thread(target=self._loop, name="smdist-checkpoints", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def finish(self) -> list[str]:
        """The end of the job: stop, take what the hosts hold, let the store go, and say so.

        Returns what could not be kept in the store, one sentence each (the checkpoint stays in
        its host's folder)."""
        self.stop()
        store = self.store
        try:
            self.sync_round(final=True)
        finally:
            store.release()
        if self.unkept:
            return [
                f"checkpoint {name} could not be copied to {store.target}: "
                f"{error.strerror or error}; it stays in {host.checkpoints / name}"
                for name, (host, error) in sorted(self.unkept.items())
            ]
        if not store.held:
            self.log.note(
                f"[upload] the job wrote no checkpoints; {store.target} keeps what it held"
            )
            return []
        moved = f"; the earlier ones were moved to {store.set_aside}" if store.earlier_moved else ""
        kept = kept_files(store.target)
        self.log.note(f"[upload] {kept} checkpoint file(s) kept in {store.target}{moved}")
        return []

    def sync_round(self, final: bool = False) -> list[str]:
        """One pass: every complete entry that the store lacks goes in; returns their names.

        ``final``: the job's processes have ended, so nothing is still being written: every
        entry counts as complete (its temporary names left out).
        """
        now = time.monotonic()
        chosen = self._entries()
        for gone in set(self._seen) - set(chosen):
            del self._seen[gone]
        ready, pending = self._complete(chosen, final, now)
        moved = self.store.earlier_moved
        synced, left = self._copy(ready, final)
        pending = pending or left
        removed = [] if pending else self._remove_deleted(chosen)
        if self.store.earlier_moved and not moved:
            self.log.note(
                f"[checkpoints] this fresh job's first checkpoint: the earlier ones in "
                f"{self.store.target} were moved to {self.store.set_aside}"
            )
        if (synced or removed) and not final:
            done = [f"synced {', '.join(synced)}"] if synced else []
            done += [f"removed {', '.join(removed)}"] if removed else []
            self.log.note(f"[checkpoints] {self.store.target}: {'; '.join(done)}")
        return synced

    def _entries(self) -> dict[str, tuple[EmulatedHost, Path]]:
        """Every checkpoint the hosts hold, by name; where hosts share a name, the first's."""
        chosen: dict[str, tuple[EmulatedHost, Path]] = {}
        for host in self.hosts:
            if host.checkpoints.is_dir():
                for entry in host.checkpoints.iterdir():
                    if not is_temporary(entry.name):
                        chosen.setdefault(entry.name, (host, entry))
        return chosen

    def _complete(
        self, chosen: dict[str, tuple[EmulatedHost, Path]], final: bool, now: float
    ) -> tuple[list[tuple[str, EmulatedHost, Path, Signature]], bool]:
        """The entries complete and not yet in the store, and whether any other is pending (still
        being written, so deletions wait for a later round)."""
        pending = False
        ready: list[tuple[str, EmulatedHost, Path, Signature]] = []
        for name, (host, entry) in sorted(chosen.items()):
            seen = signature(entry)
            if seen is None or (seen[1] and not final):  # vanished, or mid-rename
                pending = True
                continue
            files = seen[0]
            if not files:
                continue  # an empty directory: no checkpoint (yet)
            if self.store.held and files == _first(signature(self.store.target / name)):
                continue  # in the store already (restored, or synced before)
            if not final and not self._settled(name, files, now):
                pending = True
                continue
            ready.append((name, host, entry, files))
        if ready and not final:
            inodes_of = {item[2]: inodes(item[2]) for item in ready}
            busy = open_for_writing(set().union(*inodes_of.values()))
            writing = [item for item in ready if inodes_of[item[2]] & busy]
            ready = [item for item in ready if item not in writing]
            pending = pending or bool(writing)
        return ready, pending

    def _copy(
        self, ready: list[tuple[str, EmulatedHost, Path, Signature]], final: bool
    ) -> tuple[list[str], bool]:
        """Put ``ready`` into the store: what went in (``name (host)``), and whether any did not.
        What could not be copied is kept in ``unkept``; the log says so once."""
        synced: list[str] = []
        unkept: dict[str, tuple[EmulatedHost, OSError]] = {}
        left = False
        for name, host, entry, files in ready:
            try:
                went_in = self.store.put(
                    name, entry, lambda e=entry, f=files: _first(signature(e)) == f
                )
            except OSError as error:  # a full disk: the others may still fit
                unkept[name] = (host, error)
                went_in = False
            if went_in:
                synced.append(f"{name} ({host.name})")
                self._seen.pop(name, None)
            else:
                left = True
        self.unkept = unkept
        if unkept and not final and not self._failed:
            self._failed = True
            named = ", ".join(sorted(unkept))
            error = next(iter(unkept.values()))[1]
            self.log.note(
                f"[checkpoints] could not copy {named} to {self.store.target}: "
                f"{error.strerror or error}; trying again each second"
            )
        return synced, left

    def _remove_deleted(self, chosen: dict[str, tuple[EmulatedHost, Path]]) -> list[str]:
        """Remove from the store what every host deleted, as SageMaker's sync does; called only
        in a round that left nothing pending, so a script that keeps one checkpoint never
        leaves the store without one."""
        removed = []
        if self.store.held:
            for name in self.store.entries():
                if name not in chosen:
                    self.store.remove(name)
                    removed.append(name)
        return removed

    def _settled(self, name: str, files: Signature, now: float) -> bool:
        first = self._seen.get(name)
        if first is None or first[0] != files:
            self._seen[name] = (files, now)
            return False
        return now - first[1] >= self.settle

    def _loop(self) -> None:
        while not self._stopping.wait(self.poll):
            try:
                self.sync_round()
            except Exception as error:  # noqa: BLE001 - keep trying; say it once
                if not self._failed:
                    self._failed = True
                    self.log.note(f"[checkpoints] could not sync to {self.store.target}: {error}")


def _first(found: tuple[Signature, bool] | None) -> Signature | None:
    return None if found is None else found[0]
