"""Writing the small files of a job's folder (its record, a stop request) safely: a folder
others can touch may hold a link where smdist expects its own file, and a disk may fill.

``write_text_atomically`` writes a new file beside the target (created exclusively and never
through a link), then renames it over the target: a link placed there is replaced, never
followed, and a reader sees the old content or the new, never half of it. A failed write
leaves no partial file behind. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
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


__all__ = ["write_text_atomically"]
