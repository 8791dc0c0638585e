"""One search at a time per study folder: ``<root>/tuning/<name>/study.lock``.

A second search of the same study would take the first one's running trials for leftovers of a
killed search, end them as stopped and queue their values again, while the first still runs them
(which then fails to record their end). So a search holds an exclusive ``flock`` on the study's
lock file for as long as it runs, before it reads or sets aside anything of the study; the file
says which process holds it. The kernel releases the lock however the holder ends, kill -9
included, so no stale lock is ever left to remove by hand.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from smdist.backends.local.preparation.setup import PrepareError
from smdist.backends.local_studies import LOCK  # what status and jobs read


class StudyInUse(PrepareError):
    """Another process is running a search of this study in this folder (exit 2)."""


@contextmanager
def study_lock(directory: Path, name: str) -> Iterator[None]:
    """Hold the study in ``directory`` for this process while the block runs; StudyInUse if
    another process holds it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip()
            raise StudyInUse(_in_use(name, path, holder)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield  # closing the file at the end drops the lock


def _in_use(name: str, path: Path, holder: str) -> str:
    who, stop = (f"pid {holder}", f"`kill {holder}`") if holder.isdigit() else ("", "kill it")
    return (
        f"study {name} is already running in this folder ({who or path}): wait for it to end, "
        f"or stop it (Ctrl-C where it runs, or {stop}), then run this again to resume it; to "
        f"search beside it, give this search another tuning.name or --root (its lock: {path})"
    )
