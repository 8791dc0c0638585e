"""Writing the small files of a job's folder (its record, a stop request) safely: a folder
others can touch may hold a link where smdist expects its own file, and a disk may fill.

``write_text_atomically`` writes a new file beside the target (created exclusively and never
through a link), then renames it over the target: a link placed there is replaced, never
followed, and a reader sees the old content or the new, never half of it. A failed write
leaves no partial file behind. ``write_record`` is the same, but on a full disk it rewrites
the record in the space the old one already holds, so a job's last word still gets there.
Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path


def write_text_atomically(path: Path, text: str) -> None:
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def write_record(path: Path, text: str) -> None:
    """``write_text_atomically``, or, where the disk is full (no room for the new file beside
    the old), ``text`` written over the old file's own bytes, if it fits in the space the old
    one holds. Only then may a reader see it half-written, and only for that instant."""
    try:
        write_text_atomically(path, text)
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT) or not _rewrite_in_place(path, text):
            raise


def _rewrite_in_place(path: Path, text: str) -> bool:
    """Whether ``text`` replaced the content of ``path`` (a plain file, never a link, with one
    name) within the blocks it has already: a full disk gives no new ones."""
    data = text.encode("utf-8")
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            return False
        if len(data) > found.st_blocks * 512:
            return False
        written = 0
        while written < len(data):
            written += os.pwrite(descriptor, data[written:], written)
        os.ftruncate(descriptor, len(data))
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)


__all__ = ["write_record", "write_text_atomically"]
