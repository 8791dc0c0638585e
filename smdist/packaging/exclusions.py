"""What no training job needs, left out of every ``source_dir`` unless the user asks for it.

A project directory used as ``source_dir: .`` holds more than code: smdist's own local root
(earlier jobs, their logs, code copies and models), virtualenvs, notebook checkpoints, OS litter
and the caches of Python tools. Shipping them costs upload time and disk on every host, and
copying smdist's root into each emulated host nests every earlier run inside the next one.

Two kinds of rule, both decided here so the upload and the local backend's code copies agree:

- **smdist's local root** is never shipped, whatever an ignore file says. It is recognised by
  name (``.smdist``, the default) or by the ``CACHEDIR.TAG`` smdist writes into any root it
  uses (``mark_local_root``), so a ``--root`` inside the project is found on later runs too.
  The tag follows the Cache Directory Tagging Specification, which backup tools and
  ``tar --exclude-caches`` honour as well.
- **Defaults** (virtualenvs found by ``pyvenv.cfg`` / ``conda-meta/`` whatever their name, any
  other directory with a ``CACHEDIR.TAG``, and the names below) are left out with their reason;
  a ``!`` rule in ``.smdistignore`` brings one back.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHEDIR_TAG = "CACHEDIR.TAG"
_CACHEDIR_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
_SMDIST_TAG_LINE = b"# This directory is smdist's local root: its jobs, logs and models."
SMDIST_TAG = (
    _CACHEDIR_SIGNATURE
    + b"\n"
    + _SMDIST_TAG_LINE
    + b"\n# smdist never packs it into a job's code. For information about cache directory"
    + b" tags see https://bford.info/cachedir/\n"
)
LOCAL_ROOT_NAME = ".smdist"
LOCAL_ROOT_REASON = "smdist's local root (earlier jobs, logs, models): never shipped"

DEFAULT_DIRECTORIES = {
    ".venv": "a virtualenv",
    ".ipynb_checkpoints": "notebook checkpoints",
    ".cache": "a cache",
    ".pytest_cache": "a Python tool's cache",
    ".mypy_cache": "a Python tool's cache",
    ".ruff_cache": "a Python tool's cache",
    ".hypothesis": "a Python tool's cache",
    ".pytype": "a Python tool's cache",
    ".tox": "a Python tool's environments",
    ".nox": "a Python tool's environments",
    ".Trashes": "OS litter",
    ".Spotlight-V100": "OS litter",
    ".fseventsd": "OS litter",
    ".TemporaryItems": "OS litter",
    "$RECYCLE.BIN": "OS litter",
}
DEFAULT_FILES = {
    ".DS_Store": "OS litter",
    "Thumbs.db": "OS litter",
    "ehthumbs.db": "OS litter",
    "desktop.ini": "OS litter",
}


def _tag(path: Path) -> bytes | None:
    try:
        with open(path / CACHEDIR_TAG, "rb") as handle:
            head = handle.read(len(_CACHEDIR_SIGNATURE) + 1 + len(_SMDIST_TAG_LINE))
    except OSError:
        return None
    return head if head.startswith(_CACHEDIR_SIGNATURE) else None


def is_local_root(name: str, path: Path) -> bool:
    """Whether the directory ``path`` (called ``name``) is an smdist local root."""
    if name == LOCAL_ROOT_NAME:
        return True
    tag = _tag(path)
    return tag is not None and _SMDIST_TAG_LINE in tag


def mark_local_root(root: Path) -> None:
    """Create ``root`` if needed and tag it, so no later pack of a project holding it ships it."""
    root.mkdir(parents=True, exist_ok=True)
    tag = root / CACHEDIR_TAG
    if not tag.is_file():
        tag.write_bytes(SMDIST_TAG)


def directory_reason(name: str, path: Path) -> str | None:
    """Why the directory ``path`` is left out by default, or None."""
    if os.path.isfile(path / "pyvenv.cfg"):
        why: str | None = "a virtualenv (pyvenv.cfg)"
    elif os.path.isdir(path / "conda-meta"):
        why = "a conda environment (conda-meta/)"
    else:
        why = DEFAULT_DIRECTORIES.get(name) or (
            f"a cache ({CACHEDIR_TAG})" if _tag(path) is not None else None
        )
    return f"left out by default: {why}" if why else None


def file_reason(name: str) -> str | None:
    """Why the file called ``name`` is left out by default, or None."""
    why = DEFAULT_FILES.get(name) or ("OS litter" if name.startswith("._") else None)
    return f"left out by default: {why}" if why else None


__all__ = [
    "CACHEDIR_TAG",
    "DEFAULT_DIRECTORIES",
    "DEFAULT_FILES",
    "LOCAL_ROOT_NAME",
    "LOCAL_ROOT_REASON",
    "directory_reason",
    "file_reason",
    "is_local_root",
    "mark_local_root",
]
