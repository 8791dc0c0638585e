"""The persistent directory that plays a local job's ``checkpoint_s3_uri``, as one job holds it.

``.smdist/checkpoints/<name>/`` is copied into every host's checkpoint directory before the job
and receives the job's checkpoints while it runs (``checkpoint_sync``). Two jobs never mix their
files there:

- one job at a time holds the store: an exclusive ``flock`` on ``.<name>.lock`` beside it, which
  the kernel releases however the holder ends (kill -9 included). A job that finds the store
  held by a running job still restores from it, but keeps its own checkpoints apart, in
  ``<name>.from-<job>/``, and says so;
- a fresh job (``--fresh``) restores nothing; the store's earlier files stay where they are
  until the job has a checkpoint of its own, and are then moved, whole, to
  ``<name>.before-<job>/`` (never deleted);
- every entry reaches the store under a temporary name and is renamed into place, so a reader
  (a restore, a re-run after kill -9) sees each checkpoint whole or not at all.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost

SYNC_PREFIX = ".smdist-sync-"  # entries on their way into (or out of) the store
# Names a writer renames into place once written: smdist's ready scripts (.tmp-<pid>-...),
# TensorFlow (<name>.tmp<hex>), downloaders (.part, .partial), and our own.
_TEMPORARY = re.compile(r"^\.tmp|^\.smdist-sync-|\.(tmp[0-9a-f]*|partial|part)$")


def is_temporary(name: str) -> bool:
    """A name that is still being written, never a checkpoint."""
    return _TEMPORARY.search(name) is not None


def _ours(name: str) -> bool:
    return name.startswith(SYNC_PREFIX)


def _temporaries(_: str, names: list[str]) -> list[str]:
    return [name for name in names if is_temporary(name)]


def kept_files(directory: Path) -> int:
    """How many checkpoint files ``directory`` holds."""
    if not directory.is_dir():
        return 0
    return sum(
        1
        for path in directory.rglob("*")
        if path.is_file() and not _ours(path.relative_to(directory).parts[0])
    )


def remove_entry(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _first_error(error: shutil.Error) -> str:
    """One line for what failed: copytree gathers one error per file it could not copy."""
    failures = error.args[0] if error.args and isinstance(error.args[0], list) else []
    if not failures:
        return str(error)
    more = f" (and {len(failures) - 1} more file(s))" if len(failures) > 1 else ""
    return f"{failures[0][-1]}{more}"


class CheckpointStore:
    """Where one job's checkpoints are kept (``target``) and restored from (``source``)."""

    def __init__(self, store: Path, job_name: str, fresh: bool) -> None:
        self.source = store
        self.target = store
        self.job_name = job_name
        self.fresh = fresh
        # A fresh job's new home for the earlier checkpoints, until it has moved them.
        self.set_aside: Path | None = store.with_name(f"{store.name}.before-{job_name}")
        self.moved_aside = False  # the fresh job has its own checkpoints here now
        self.earlier_moved = False  # ... and there were earlier ones, now in set_aside
        self.holder: str | None = None  # the running job that holds the store, if not us
        self._lock: IO[str] | None = None
        if not fresh:
            self.set_aside = None

    @classmethod
    def claim(cls, store: Path, job_name: str, fresh: bool) -> CheckpointStore:
        """The store for ``job_name``: held by it, or, while another running job holds it, a
        store of its own beside it (restoring from the shared one unless fresh)."""
        kept = cls(store, job_name, fresh)
        store.parent.mkdir(parents=True, exist_ok=True)
        handle = open(store.with_name(f".{store.name}.lock"), "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            kept.holder = handle.read().strip() or "another job"
            handle.close()
            kept.target = store.with_name(f"{store.name}.from-{job_name}")
            kept.set_aside = None  # nothing earlier of ours to set aside there
            return kept
        handle.seek(0)
        handle.truncate()
        handle.write(job_name)
        handle.flush()
        kept._lock = handle
        if store.is_dir():  # leftovers of a holder killed mid-copy: ours to clear now
            for entry in store.iterdir():
                if _ours(entry.name):
                    remove_entry(entry)
        return kept

    @property
    def held(self) -> bool:
        """True once the job's checkpoints may replace and delete what ``target`` holds: a
        fresh job only after it has set the earlier ones aside."""
        return self.set_aside is None or self.moved_aside

    def restore(self, hosts: list[EmulatedHost]) -> int:
        """Copy the kept checkpoints into every host; returns how many files there were."""
        count = 0 if self.fresh else kept_files(self.source)
        if not count:
            return 0
        for host in hosts:
            try:
                shutil.copytree(
                    self.source,
                    host.checkpoints,
                    dirs_exist_ok=True,
                    ignore=lambda _, names: [name for name in names if _ours(name)],
                )
            except shutil.Error:
                pass  # an entry replaced while copied, by the job holding the store
        return count

    def put(self, name: str, source: Path, unchanged: Callable[[], bool]) -> bool:
        """Copy ``source`` (a file or directory) in as ``name``, whole: under a temporary name,
        then renamed into place, and only if ``unchanged()`` still holds after the copy.
        Returns whether it went in: False when it changed meanwhile (to be tried again once it
        settles). Raises OSError when it could not be copied though it stayed as it was (a full
        disk), leaving nothing of the copy behind."""
        self._take_over()
        temporary = self.target / f"{SYNC_PREFIX}{uuid.uuid4().hex[:8]}-{name}"
        try:
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, temporary, symlinks=True, ignore=_temporaries)
            else:
                shutil.copy2(source, temporary, follow_symlinks=False)
        except (OSError, shutil.Error) as error:
            remove_entry(temporary)
            if not unchanged():
                return False
            if isinstance(error, shutil.Error):
                raise OSError(_first_error(error)) from error
            raise
        if not unchanged():  # written to while it was copied: try again once it settles
            remove_entry(temporary)
            return False
        self._replace(temporary, self.target / name)
        return True

    def remove(self, name: str) -> None:
        """Delete ``name`` (the job deleted it), renamed away first so no reader sees half."""
        entry = self.target / name
        if not entry.exists() and not entry.is_symlink():
            return
        doomed = self.target / f"{SYNC_PREFIX}{uuid.uuid4().hex[:8]}-{name}"
        os.replace(entry, doomed)
        remove_entry(doomed)

    def entries(self) -> list[str]:
        if not self.target.is_dir():
            return []
        return sorted(entry.name for entry in self.target.iterdir() if not _ours(entry.name))

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing drops the flock
            self._lock = None

    def _take_over(self) -> None:
        """A fresh job's first checkpoint: the earlier ones move aside, whole, first."""
        if not self.held and self.set_aside is not None:
            if kept_files(self.target):
                os.replace(self.target, self.set_aside)
                self.earlier_moved = True
            else:
                shutil.rmtree(self.target, ignore_errors=True)  # nothing kept: nothing to move
            self.moved_aside = True
        self.target.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def _replace(new: Path, old: Path) -> None:
        if old.is_dir() and not old.is_symlink():
            # A directory cannot be renamed over a full one: move the old one away first.
            doomed = old.with_name(f"{SYNC_PREFIX}{uuid.uuid4().hex[:8]}-{old.name}")
            os.replace(old, doomed)
            os.replace(new, old)
            remove_entry(doomed)
        else:
            os.replace(new, old)
