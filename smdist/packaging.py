"""What gets shipped as a job's code, and the tarball it travels in.

Every backend runs the same code directory: the user's ``source_dir`` (or smdist's ready entry
points), plus the standard-library-only ``smdist.runtime`` under a stub ``smdist`` package, plus
the torchrun launcher when the plan needs it. This module decides that file list once:

- ``source_files`` honours ``.gitignore`` (at any depth) and ``.smdistignore`` and always drops
  secrets (``.env*``, keys, ``.aws/``, ``credentials*``) and ``.git/`` — a negated ignore rule
  cannot bring a secret back.
- ``bundle`` / ``stage`` give a local backend its ``/opt/ml/code``.
- ``pack`` writes a deterministic ``sourcedir.tar.gz``: the same content gives the same bytes
  and so the same sha256, which is what lets the SageMaker backend skip uploading unchanged code.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pathspec

from smdist.errors import Problem, SpecError

if TYPE_CHECKING:
    from smdist.planning import Plan

IGNORE_FILES = (".gitignore", ".smdistignore")
# Never shipped, whatever the ignore files say: credentials and keys, VCS data, bytecode.
ALWAYS_EXCLUDED = (
    ".env*",
    "*.pem",
    "*.key",
    # SSH keys by their standard names. Not a bare "id_*": that would silently drop user code
    # such as id_mapping.py from the job.
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".aws/",
    "credentials*",
    ".git/",
    "__pycache__/",
    "*.pyc",
)
LAUNCHER_SCRIPT = "launch_torchrun.py"
TARBALL_NAME = "sourcedir.tar.gz"
# Fixed tar metadata: identical content must give identical bytes (946684800 = 2000-01-01).
_FIXED_MTIME = 946684800
_FILE_MODE = 0o644
_EXEC_MODE = 0o755
_DIGEST_FORMAT = b"smdist-bundle-v1\0"
_COMPRESS_LEVEL = 6  # level 9 costs ~3x the time for a few percent on typical source trees

RUNTIME_STUB = '''"""smdist, runtime-only bundle.

This directory holds only ``smdist.runtime``: the standard-library code the training scripts
use inside the container. The rest of smdist (job specs, planning, backends) is not shipped;
install smdist where you plan and submit jobs.
"""
'''

_ALWAYS = pathspec.GitIgnoreSpec.from_lines(ALWAYS_EXCLUDED)


@dataclass(frozen=True)
class Package:
    """A packed code directory: the tarball, its content hash, and what is inside."""

    path: Path
    sha256: str
    size: int
    files: list[str]


# ---- which files ---------------------------------------------------------------------------
def _load_ignore_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    lines: list[str] = []
    for name in IGNORE_FILES:
        candidate = directory / name
        if candidate.is_file():
            lines.extend(candidate.read_text(errors="replace").splitlines())
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _ignored(specs: list[tuple[str, pathspec.GitIgnoreSpec]], relative: str) -> bool:
    """Git's rule: the deepest ignore file with a matching pattern decides."""
    decision = False
    for base, spec in specs:
        if base and not relative.startswith(base + "/"):
            continue
        result = spec.check_file(relative[len(base) + 1 :] if base else relative)
        if result.include is not None:
            decision = result.include
    return decision


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def source_files(source_dir: Path) -> list[str]:
    """Sorted relative POSIX paths of the files shipped from ``source_dir``.

    Directory symlinks are not followed and file symlinks pointing outside ``source_dir`` are
    skipped, so a link cannot pull a file from elsewhere (``~/.aws``) into the upload.
    """
    root = Path(source_dir).resolve()
    if not root.is_dir():
        raise SpecError(
            [
                Problem(
                    "code.source_dir",
                    "is not a directory",
                    str(source_dir),
                    "an existing directory",
                )
            ]
        )
    files: list[str] = []
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for current, dirnames, filenames in os.walk(root):
        base = Path(current).relative_to(root).as_posix()
        base = "" if base == "." else base
        # Ignore files of directories we left are no longer in scope.
        specs = [(b, s) for b, s in specs if not b or base == b or base.startswith(b + "/")]
        local = _load_ignore_spec(Path(current))
        if local is not None:
            specs.append((base, local))
        kept_dirs = []
        for name in sorted(dirnames):
            relative = f"{base}/{name}" if base else name
            if _ALWAYS.match_file(relative + "/") or _ignored(specs, relative + "/"):
                continue
            if (Path(current) / name).is_symlink():
                continue
            kept_dirs.append(name)
        dirnames[:] = kept_dirs
        for name in filenames:
            relative = f"{base}/{name}" if base else name
            if _ALWAYS.match_file(relative) or _ignored(specs, relative):
                continue
            path = Path(current) / name
            if path.is_symlink() and not (_inside(path, root) and path.is_file()):
                continue
            if not path.is_file():
                continue  # sockets, fifos, dangling links
            files.append(relative)
    return sorted(files)


def excluded_secrets(source_dir: Path) -> list[str]:
    """Files under ``source_dir`` that match the always-excluded secret patterns (for a notice)."""
    root = Path(source_dir).resolve()
    found = []
    for current, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__")]
        base = Path(current).relative_to(root).as_posix()
        for name in filenames:
            relative = name if base == "." else f"{base}/{name}"
            if _ALWAYS.match_file(relative) and not relative.endswith(".pyc"):
                found.append(relative)
    return sorted(found)


# ---- what the code directory holds -----------------------------------------------------------
def entry_points_dir() -> Path:
    import smdist.entry_points

    return Path(smdist.entry_points.__file__).resolve().parent


def runtime_dir() -> Path:
    import smdist.runtime

    return Path(smdist.runtime.__file__).resolve().parent


def _runtime_stub() -> Path:
    """The stub ``smdist/__init__.py``, written once per content into the temp directory."""
    digest = hashlib.sha256(RUNTIME_STUB.encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"smdist-{os.getuid() if hasattr(os, 'getuid') else 0}"
    path = cache / f"runtime-stub-{digest}.py"
    if not path.is_file() or path.read_text() != RUNTIME_STUB:
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(RUNTIME_STUB)
        os.replace(tmp, path)
    return path


def _runtime_files() -> list[tuple[Path, str]]:
    root = runtime_dir()
    return [
        (root / relative, f"smdist/runtime/{relative}")
        for relative in source_files(root)
        if relative.endswith(".py")
    ]


def bundle(plan: Plan) -> list[tuple[Path, str]]:
    """(absolute source file, path inside the code directory) for everything a job ships.

    smdist's runtime replaces any ``smdist/`` the user's directory may hold, so the scripts
    always import the runtime this smdist version planned for.
    """
    entries: dict[str, Path] = {}
    if plan.source_dir is None:
        root = entry_points_dir()
        for relative in source_files(root):
            if relative.endswith(".py") and relative != "__init__.py":
                entries[relative] = root / relative
    else:
        root = Path(plan.source_dir).resolve()
        for relative in source_files(root):
            if relative != "smdist" and not relative.startswith("smdist/"):
                entries[relative] = root / relative
        if plan.entry_point not in entries:
            raise SpecError(
                [
                    Problem(
                        "code.entry_point",
                        f"is not a file in {plan.source_dir} (or an ignore rule excludes it)",
                        plan.entry_point,
                        ", ".join(sorted(p for p in entries if p.endswith(".py"))[:10]) or None,
                    )
                ]
            )
    if plan.program == LAUNCHER_SCRIPT and LAUNCHER_SCRIPT not in entries:
        entries[LAUNCHER_SCRIPT] = entry_points_dir() / LAUNCHER_SCRIPT
    if plan.program not in entries:
        raise SpecError([Problem("code.entry_point", "no such script to run", plan.program)])
    entries["smdist/__init__.py"] = _runtime_stub()
    for path, arcname in _runtime_files():
        entries[arcname] = path
    return [(entries[name], name) for name in sorted(entries)]


def stage(plan: Plan, dest: Path) -> list[str]:
    """Copy the bundle into ``dest`` (a local backend's ``/opt/ml/code``); return the paths."""
    dest = Path(dest)
    names = []
    for source, arcname in bundle(plan):
        target = dest / arcname
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        shutil.copymode(source, target)
        names.append(arcname)
    return names


# ---- the tarball ---------------------------------------------------------------------------
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


def pack(plan: Plan, out_dir: Path) -> Package:
    """Write ``out_dir/sourcedir.tar.gz`` for ``plan`` and return it with its sha256."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = bundle(plan)
    target = out_dir / TARBALL_NAME
    write_tarball(entries, target)
    return Package(target, file_sha256(target), target.stat().st_size, [a for _, a in entries])


__all__ = [
    "ALWAYS_EXCLUDED",
    "Package",
    "bundle",
    "content_digest",
    "excluded_secrets",
    "pack",
    "source_files",
    "stage",
]
