"""What of this machine's ``/tmp`` an emulated host still sees.

A container's ``/tmp`` is its own. Two jobs' ``algo-1`` share a hostname and, in PID
namespaces of their own, the same PIDs, so anything named after them there (Open MPI's and
PMIx's session folders, ``/tmp/ompi.algo-1.0/pid.7``) would collide on a shared ``/tmp``. So
each host gets an empty ``/tmp``, and the machine lends it back only the top-level folders of
``/tmp`` that hold what the job runs from: its own files, the interpreter and its packages, the
hosts' run folder.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

TMP = Path("/tmp")
SEARCH_PATHS = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")


def lent_paths(paths: Iterable[str | Path], *envs: Mapping[str, str]) -> list[str]:
    """The top-level folders of ``/tmp`` that hold any of ``paths``, the interpreter's files
    (``sys.prefix``, ``sys.path``) or an entry of the search paths in any of ``envs`` (every
    environment the host's processes start from: its command's and its ssh sessions')."""
    candidates = [*map(str, paths), sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]
    for env in envs:
        for name in SEARCH_PATHS:
            candidates += env.get(name, "").split(os.pathsep)
    lent: set[str] = set()
    for candidate in filter(None, candidates):
        for path in {Path(os.path.abspath(candidate)), Path(os.path.realpath(candidate))}:
            if TMP in path.parents:
                top = TMP / path.relative_to(TMP).parts[0]
                if top.exists():
                    lent.add(str(top))
    return sorted(lent)


__all__ = ["TMP", "lent_paths"]
