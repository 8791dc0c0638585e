"""What gets shipped as a job's code: the one file list every backend runs.

Every backend runs the same code directory: the user's ``source_dir`` (or smdist's ready entry
points), plus the standard-library-only ``smdist.runtime`` under a stub ``smdist`` package, plus
the torchrun launcher when the plan needs it. This module decides that file list once:

- ``manifest`` / ``source_files`` (``smdist.packaging.manifest``) honour ``.gitignore`` (at any
  depth) and ``.smdistignore`` and always drop secrets, by name and by content, directly or
  through a symlink (``smdist.checks.secrets``), plus ``.git`` and bytecode — no ignore rule
  brings a secret back. ``dry_run_lines`` shows what ships and every path left out with its
  reason.
- ``bundle`` / ``stage`` give a local backend its ``/opt/ml/code``; every bundle carries the
  plan's resolved launch as ``smdist/launch.json``, which smdist's launcher reads. Staged copies
  of smdist's runtime take their compiled bytecode along (``smdist.packaging.bytecode``).
- ``pack`` writes the list as a deterministic ``sourcedir.tar.gz``; the bytes and the content
  digest that names an upload are ``smdist.packaging.tarball``'s, re-exported here.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import smdist.runtime
from smdist.contract.launch import LAUNCH_FILE
from smdist.errors import Problem, SpecError
from smdist.packaging.bytecode import runtime_bytecode
from smdist.packaging.manifest import Manifest
from smdist.packaging.manifest import build as build_manifest
from smdist.packaging.notice import human_size, large_upload_lines
from smdist.packaging.tarball import Package, content_digest, file_sha256, write_tarball

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

LAUNCHER_SCRIPT = "launch_torchrun.py"
TARBALL_NAME = "sourcedir.tar.gz"

RUNTIME_STUB = '''"""smdist, runtime-only bundle.

This directory holds only ``smdist.runtime`` and ``smdist.contract``: the standard-library code
the training scripts and smdist's driver use inside the container. The rest of smdist (job
specs, planning, backends) is not shipped; install smdist where you plan and submit jobs.
"""
'''


# ---- which files ---------------------------------------------------------------------------
def manifest(source_dir: Path | str) -> Manifest:
    """What ships from ``source_dir`` and what was left out, with a reason for each."""
    return build_manifest(source_dir)


def source_files(source_dir: Path | str) -> list[str]:
    """Sorted relative POSIX paths of the files shipped from ``source_dir``."""
    return build_manifest(source_dir).shipped


def excluded_secrets(source_dir: Path | str) -> list[str]:
    """The paths under ``source_dir`` left out as secrets (by name, by content, or linked)."""
    return build_manifest(source_dir).secrets


# ---- what the code directory holds -----------------------------------------------------------
def entry_points_dir() -> Path:
    # smdist.entry_points exists only in an installed smdist (pyproject maps entry_points/).
    # lazy: a job with its own source_dir is packed without it
    import smdist.entry_points

    return Path(smdist.entry_points.__file__).resolve().parent


def runtime_dir() -> Path:
    return Path(smdist.runtime.__file__).resolve().parent


def _generated(text: str, name: str) -> Path:
    """A file smdist writes into the bundle (``text``), kept once per content in the temp
    directory, so that the bundle stays a list of files."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"smdist-{os.getuid() if hasattr(os, 'getuid') else 0}"
    path = cache / f"{name}-{digest}"
    if not path.is_file() or path.read_text() != text:
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    return path


def _own_modules(root: Path) -> list[str]:
    """Sorted relative POSIX paths of the modules of one of smdist's own packages.

    smdist's packages hold its modules and their bytecode only, so a walk for ``*.py`` lists
    what ships; the user's directories go through the manifest (ignore files, secrets).
    """
    return sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if "__pycache__" not in path.relative_to(root).parts
    )


def _runtime_files() -> list[tuple[Path, str]]:
    """``smdist.runtime`` and ``smdist.contract``, the in-container code, as they ship."""
    files = []
    for root in (runtime_dir(), runtime_dir().parent / "contract"):
        files += [
            (root / relative, f"smdist/{root.name}/{relative}") for relative in _own_modules(root)
        ]
    return files


def bundle(plan: Plan) -> list[tuple[Path, str]]:
    """(absolute source file, path inside the code directory) for everything a job ships.

    smdist's runtime replaces any ``smdist/`` the user's directory may hold, so the scripts
    always import the runtime this smdist version planned for.
    """
    return _bundle(plan)[0]


def _bundle(plan: Plan) -> tuple[list[tuple[Path, str]], Manifest | None]:
    entries: dict[str, Path] = {}
    found: Manifest | None = None
    if plan.source_dir is None:
        root = entry_points_dir()
        for relative in _own_modules(root):
            if relative != "__init__.py":
                entries[relative] = root / relative
    else:
        found = build_manifest(plan.source_dir)
        for relative in found.shipped:
            if relative != "smdist" and not relative.startswith("smdist/"):
                entries[relative] = found.root / relative
        if plan.entry_point not in entries:
            why = found.reason(plan.entry_point)
            raise SpecError(
                [
                    Problem(
                        "code.entry_point",
                        f"is left out of {plan.source_dir}: {why}"
                        if why
                        else f"is not a file in {plan.source_dir}",
                        plan.entry_point,
                        ", ".join(sorted(p for p in entries if p.endswith(".py"))[:10]) or None,
                    )
                ]
            )
    if plan.program == LAUNCHER_SCRIPT and LAUNCHER_SCRIPT not in entries:
        entries[LAUNCHER_SCRIPT] = entry_points_dir() / LAUNCHER_SCRIPT
    if plan.program not in entries:
        raise SpecError([Problem("code.entry_point", "no such script to run", plan.program)])
    entries["smdist/__init__.py"] = _generated(RUNTIME_STUB, "runtime-stub.py")
    # The resolved launch, read by smdist's launcher and driver in the container.
    entries[f"smdist/{LAUNCH_FILE}"] = _generated(plan.launch.to_json(), LAUNCH_FILE)
    for path, arcname in _runtime_files():
        entries[arcname] = path
    return [(entries[name], name) for name in sorted(entries)], found


def dry_run_lines(plan: Plan) -> list[str]:
    """What a dry run shows about the code: the files and bytes that ship, and every path of
    ``source_dir`` left out with its reason (secrets first)."""
    entries, found = _bundle(plan)
    size = sum(os.path.getsize(source) for source, _ in entries)
    if found is None:
        where = "smdist's ready entry points and runtime"
    else:
        where = (
            f"{len(found.shipped)} files, {human_size(found.shipped_bytes)} from {plan.source_dir};"
            " the rest is smdist's runtime"
        )
    lines = [f"code: {len(entries)} files, {human_size(size)} ship ({where})"]
    if found is not None and found.left_out:
        lines.append(f"left out ({len(found.left_out)}):")
        lines.extend(f"  {line}" for line in found.lines())
        if any(item.reason.startswith("left out by default") for item in found.left_out):
            lines.append(
                "  (a '!' rule in .smdistignore, such as '!.cache/', ships what is left out by"
                " default)"
            )
    if found is not None:
        lines.extend(large_upload_lines(found))
    return lines


def upload_notice(plan: Plan) -> list[str]:
    """The large-upload announcement for ``plan``'s code (none when it is small)."""
    return [] if plan.source_dir is None else large_upload_lines(build_manifest(plan.source_dir))


def stage(
    plan: Plan,
    dest: Path,
    entries: list[tuple[Path, str]] | None = None,
    bytecode: bool = False,
) -> list[str]:
    """Copy the bundle (``entries``, or ``bundle(plan)``) into ``dest`` (a local backend's
    ``/opt/ml/code``); return the paths. The same file list as the upload, by construction.

    ``bytecode``: the hosts run this machine's Python, so smdist's own runtime modules also
    get the bytecode this installation compiled for them (``runtime_bytecode``); the user's
    files never do, and the returned list names only the bundle's files.
    """
    dest = Path(dest)
    names = []
    made: set[Path] = set()
    own = _own_package_dir() if bytecode else None
    for source, arcname in bundle(plan) if entries is None else entries:
        target = dest / arcname
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        shutil.copyfile(source, target)
        shutil.copymode(source, target)
        if own is not None and arcname.startswith("smdist/") and source.is_relative_to(own):
            runtime_bytecode(source, target, made)
        names.append(arcname)
    return names


def _own_package_dir() -> Path:
    return runtime_dir().parent


# ---- the tarball ---------------------------------------------------------------------------
def pack(plan: Plan, out_dir: Path) -> Package:
    """Write ``out_dir/sourcedir.tar.gz`` for ``plan`` and return it with its sha256."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = bundle(plan)
    target = out_dir / TARBALL_NAME
    write_tarball(entries, target)
    return Package(target, file_sha256(target), target.stat().st_size, [a for _, a in entries])


__all__ = [
    "Manifest",
    "Package",
    "bundle",
    "content_digest",
    "dry_run_lines",
    "excluded_secrets",
    "file_sha256",
    "manifest",
    "pack",
    "runtime_bytecode",
    "source_files",
    "stage",
    "upload_notice",
    "write_tarball",
]
