"""How a bundle travels to SageMaker: a deterministic tarball, and the digest that names it.

``bundle`` decides which files ship; this module decides only what bytes they become. Both
values here are functions of the entries' paths, executable bits and contents, never of
timestamps, owners or the order the entries come in:

- ``write_tarball`` writes the ``sourcedir.tar.gz`` the toolkit unpacks: the same content gives
  the same bytes, and so the same sha256 (``file_sha256``).
- ``content_digest`` hashes the same three things without compressing anything, so a backend
  can name an upload by it and learn whether the code is already there before packing.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Fixed tar metadata: identical content must give identical bytes (946684800 = 2000-01-01).
_FIXED_MTIME = 946684800
_FILE_MODE = 0o644
_EXEC_MODE = 0o755
_DIGEST_FORMAT = b"smdist-bundle-v1\0"
_COMPRESS_LEVEL = 6  # level 9 costs ~3x the time for a few percent on typical source trees


@dataclass(frozen=True)
class Package:
    """A packed code directory: the tarball, its content hash, and what is inside."""

    path: Path
    sha256: str
    size: int
    files: list[str]


def _tar_info(arcname: str, size: int, executable: bool) -> tarfile.TarInfo:
    info = tarfile.TarInfo(arcname)
    info.size = size
    info.mtime = _FIXED_MTIME
    info.mode = _EXEC_MODE if executable else _FILE_MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def write_tarball(entries: Iterable[tuple[Path, str]], target: Path) -> None:
    """Deterministic tar.gz of ``entries`` (sorted by path): no timestamps, owners or names."""
    ordered = sorted(entries, key=lambda entry: entry[1])
    tmp = target.with_name(target.name + ".partial")
    with open(tmp, "wb") as raw:
        # filename="" and mtime=0 keep the gzip header free of the path and the time.
        with gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=_COMPRESS_LEVEL
        ) as zipped:
            with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for source, arcname in ordered:
                    executable = os.access(source, os.X_OK)
                    with open(source, "rb") as handle:
                        size = os.fstat(handle.fileno()).st_size
                        tar.addfile(_tar_info(arcname, size, executable), handle)
    os.replace(tmp, target)


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def content_digest(entries: Iterable[tuple[Path, str]]) -> str:
    """sha256 over the bundle's paths, executable bits and file contents.

    Cheaper than packing (no compression) and independent of how the tarball is written, so a
    backend can name an upload by it and find out whether the code is already there before
    packing anything.
    """
    digest = hashlib.sha256(_DIGEST_FORMAT)
    for source, arcname in sorted(entries, key=lambda entry: entry[1]):
        size = os.path.getsize(source)
        executable = b"x" if os.access(source, os.X_OK) else b"-"
        digest.update(arcname.encode() + b"\0" + executable + size.to_bytes(8, "big"))
        with open(source, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()
