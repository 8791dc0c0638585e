"""Compiled bytecode for the copies of smdist's runtime that a local backend stages.

A bundle ships source only. Where the hosts run this machine's Python (the local backend),
the runtime modules this installation already compiled can travel with their copies, because
the Deep Learning Containers set PYTHONDONTWRITEBYTECODE: without it, every process of every
host compiles the runtime again, tens of milliseconds before torchrun and each rank can start.
This module decides when that bytecode is still valid for a copy and places it; the user's
files never get any.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path


def runtime_bytecode(source: Path, target: Path, made: set[Path] | None = None) -> bool:
    """Give ``target``, a copy of smdist's module ``source``, that module's compiled bytecode
    (``made``: the directories known to exist).

    The copy takes the source's modification time, which a timestamp-checked ``.pyc`` is
    matched against (a hash-checked one matches by content); a stale or missing ``.pyc`` is
    skipped and Python compiles as before. The ``.pyc`` is hard-linked where it can be: Python
    replaces bytecode by renaming, never by writing into it. Returns whether bytecode was
    placed.
    """
    if sys.pycache_prefix is not None:  # bytecode kept elsewhere: nothing beside the code
        return False
    made = set() if made is None else made
    compiled = importlib.util.cache_from_source(str(source))
    try:
        stat = os.stat(source)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        if os.stat(compiled).st_mtime_ns < stat.st_mtime_ns:
            return False
        placed = Path(importlib.util.cache_from_source(str(target)))
        if placed.parent not in made:
            placed.parent.mkdir(exist_ok=True)
            made.add(placed.parent)
        try:
            os.link(compiled, placed)
        except OSError:  # another file system, or links refused: a copy
            shutil.copyfile(compiled, placed)
    except OSError:  # bytecode only saves time; the source is in place either way
        return False
    return True
