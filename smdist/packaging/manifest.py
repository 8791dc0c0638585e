"""Which files of a ``source_dir`` ship with a job, and why each of the others does not.

One walk decides, in this order, for every path (the first reason that applies wins):

1. a secret by name (``secret_scan.SECRET_NAMES``): before any ignore file is read, so a
   negated rule (``!.netrc``) in ``.gitignore`` or ``.smdistignore`` can never bring one back;
2. never shipped: smdist's own local root (``smdist.packaging.exclusions``), ``.git``,
   ``__pycache__/``, ``*.pyc``;
3. ignored by a ``.gitignore`` / ``.smdistignore`` (at any depth, git's rules);
   then left out by default (virtualenvs, notebook checkpoints, caches, OS litter: see
   ``smdist.packaging.exclusions``) unless the last matching rule is a ``!`` in ``.smdistignore``;
4. a symlink: followed hop by hop; left out when any hop leaves ``source_dir`` (rather than
   refusing the job: a stray link to a dataset or an interpreter should not stop a job, and the
   dry run names it), names a secret, dangles, loops, or ends at a directory (never followed);
5. a secret by content (``secret_scan.scan_file``, cached per file), of the file or the file a
   symlink points to.

The result is a ``Manifest``: what ships, its size, and every path left out with its reason.
The local backend's per-host code copies and the upload both come from it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.checks.secrets import VerdictCache, secret_name
from smdist.errors import Problem, SpecError
from smdist.packaging import exclusions as defaults

if TYPE_CHECKING:
    import pathspec

    _Specs = list[tuple[str, str, pathspec.GitIgnoreSpec]]  # (base, ignore file's path, rules)

IGNORE_FILES = (".gitignore", ".smdistignore")
_NEVER_DIRS = {".git": "never shipped: .git/", "__pycache__": "never shipped: bytecode"}
_MAX_HOPS = 40
_SECRET_DIR_LISTED = 50  # files listed one by one inside a secret directory, then a count


@dataclass(frozen=True)
class LeftOut:
    """A path that does not ship; a directory's path ends with ``/``."""

    path: str
    reason: str
    secret: bool = False


@dataclass
class Manifest:
    """What ships from ``root`` (sorted relative POSIX paths) and what was left out, and why."""

    root: Path
    shipped: list[str] = field(default_factory=list)
    shipped_bytes: int = 0
    left_out: list[LeftOut] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def secrets(self) -> list[str]:
        return [item.path for item in self.left_out if item.secret]

    def reason(self, relative: str) -> str | None:
        """Why ``relative`` (or a directory holding it) does not ship; None if it ships."""
        for item in self.left_out:
            if item.path == relative or (
                item.path.endswith("/") and relative.startswith(item.path)
            ):
                return item.reason
        return None

    def lines(self) -> list[str]:
        """The left-out paths, secrets first, one ``path  reason`` line each."""
        ordered = sorted(self.left_out, key=lambda item: (not item.secret, item.path))
        width = min(max((len(item.path) for item in ordered), default=0), 48)
        return [f"{item.path:<{width}}  {item.reason}" for item in ordered]


def _load_ignore_specs(base: str, directory: Path) -> _Specs:
    specs: _Specs = []
    for name in IGNORE_FILES:
        candidate = directory / name
        try:
            if candidate.is_file():
                import pathspec  # lazy: most code directories have no ignore file

                lines = candidate.read_text(errors="replace").splitlines()
                label = f"{base}/{name}" if base else name
                specs.append((base, label, pathspec.GitIgnoreSpec.from_lines(lines)))
        except OSError:
            continue  # an unreadable ignore file ignores nothing
    return specs


def _ignore_decision(specs: _Specs, relative: str) -> tuple[str | None, bool | None]:
    """Git's rule: the last matching pattern, deepest ignore file last, decides.

    Returns (the deciding ignore file, True ignored / False brought back by ``!``), or
    (None, None) when no rule matches.
    """
    decision: tuple[str | None, bool | None] = (None, None)
    for base, label, spec in specs:
        if base and not relative.startswith(base + "/"):
            continue
        result = spec.check_file(relative[len(base) + 1 :] if base else relative)
        if result.include is not None:
            decision = (label, result.include)
    return decision


def _left_out_reason(specs: _Specs, relative: str, default: str | None) -> str | None:
    """Ignored by a rule, or left out by default unless ``.smdistignore`` brings it back."""
    label, ignored = _ignore_decision(specs, relative)
    if ignored:
        return f"ignored by {label}"
    if default and not (ignored is False and label and label.endswith(".smdistignore")):
        return default
    return None


def _never_shipped(relative: str, is_dir: bool) -> str | None:
    name = relative.rsplit("/", 1)[-1]
    if is_dir:
        return _NEVER_DIRS.get(name)
    if name == ".git":  # a worktree's or submodule's pointer file
        return "never shipped: .git"
    return "never shipped: bytecode" if name.endswith(".pyc") else None


def _outside_reason(target: Path) -> tuple[str, bool]:
    """A link leaving source_dir; also a secret when the target's own path names one."""
    reason = f"symlink to a path outside source_dir: {target}"
    pattern = secret_name(target.as_posix().lstrip("/"))
    return (f"{reason} (secret by name: {pattern})", True) if pattern else (reason, False)


class _Walk:
    def __init__(self, root: Path, cache: VerdictCache) -> None:
        self.root = root
        self.cache = cache
        self.result = Manifest(root)

    def leave(self, relative: str, reason: str, secret: bool = False) -> None:
        self.result.left_out.append(LeftOut(relative, reason, secret))

    def _relative(self, path: Path) -> str | None:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def run(self) -> Manifest:
        pending: list[tuple[str, Path, _Specs]] = [("", self.root, [])]
        while pending:
            base, directory, inherited = pending.pop()
            specs = inherited + _load_ignore_specs(base, directory)
            try:
                with os.scandir(directory) as scan:
                    entries = sorted(scan, key=lambda entry: entry.name)
            except OSError as exc:
                self.leave(f"{base}/" if base else "./", f"unreadable: {exc.strerror}")
                continue
            for entry in reversed(entries):  # popped in name order
                relative = f"{base}/{entry.name}" if base else entry.name
                if entry.is_dir(follow_symlinks=False):
                    path = Path(entry.path)
                    if self._enter(relative, path, specs):
                        pending.append((relative, path, specs))
                else:
                    self._file(relative, entry, specs)
        self.result.shipped.sort()
        self.result.left_out.sort(key=lambda item: item.path)
        return self.result

    def _enter(self, relative: str, path: Path, specs: _Specs) -> bool:
        pattern = secret_name(relative, is_dir=True)
        if pattern:
            self._secret_dir(relative, path, f"secret by name: {pattern}")
            return False
        name = relative.rsplit("/", 1)[-1]
        if defaults.is_local_root(name, path):  # whatever the ignore files say
            self.leave(relative + "/", defaults.LOCAL_ROOT_REASON)
            return False
        reason = _never_shipped(relative, is_dir=True) or _left_out_reason(
            specs, relative + "/", defaults.directory_reason(name, path)
        )
        if reason:
            self.leave(relative + "/", reason)
            return False
        return True

    def _secret_dir(self, relative: str, path: Path, reason: str) -> None:
        """List a secret directory's files (not its contents) so the dry run shows them."""
        found: list[str] = []
        for current, _dirs, filenames in os.walk(path):  # never follows directory links
            base = Path(current).relative_to(self.root).as_posix()
            found.extend(f"{base}/{name}" for name in filenames)
            if len(found) > _SECRET_DIR_LISTED:
                break
        if not found or len(found) > _SECRET_DIR_LISTED:
            self.leave(relative + "/", reason, secret=True)
            return
        for item in sorted(found):
            self.leave(item, reason, secret=True)

    def _file(self, relative: str, entry: os.DirEntry[str], specs: _Specs) -> None:
        pattern = secret_name(relative)
        if pattern:
            return self.leave(relative, f"secret by name: {pattern}", secret=True)
        reason = _never_shipped(relative, is_dir=False) or _left_out_reason(
            specs, relative, defaults.file_reason(entry.name)
        )
        if reason:
            return self.leave(relative, reason)
        # Plain files stay strings: Path objects were a third of a cached re-pack's time.
        target: str | Path = entry.path
        is_link = entry.is_symlink()
        if is_link:
            followed = self._follow(Path(entry.path))
            if isinstance(followed, tuple):
                return self.leave(relative, *followed)
            target = followed
        try:
            st = os.stat(target)
            if not stat.S_ISREG(st.st_mode):
                return self.leave(relative, "not a regular file")
            verdict = self.cache.verdict(target, st)
        except OSError as exc:
            return self.leave(relative, f"unreadable: {exc.strerror}")
        if verdict:
            reason = f"secret by content: {verdict}"
            if is_link:
                reason = f"symlink to {self._relative(Path(target))} ({reason})"
            return self.leave(relative, reason, secret=True)
        self.result.shipped.append(relative)
        self.result.shipped_bytes += st.st_size
        self.result.sizes[relative] = st.st_size

    def _follow(self, link: Path) -> Path | tuple[str, bool]:
        """The file ``link`` ends at inside source_dir, or (reason left out, is a secret)."""
        current = link
        for _ in range(_MAX_HOPS):
            try:
                text = os.readlink(current)
            except OSError:
                break  # not a link: the end of the chain
            hop = current.parent / text
            try:
                # The hop's directory resolved, its last name kept: the next link in the chain.
                hop = (
                    hop.resolve()
                    if hop.name in ("", ".", "..")
                    else hop.parent.resolve() / hop.name
                )
            except (OSError, RuntimeError):
                return "symlink loop", False
            relative = self._relative(hop)
            if relative is None:
                return _outside_reason(hop)
            pattern = secret_name(relative) or _never_shipped(relative, is_dir=False)
            if pattern:
                what = pattern if pattern.startswith("never") else f"secret by name: {pattern}"
                return f"symlink to {relative} ({what})", not pattern.startswith("never")
            current = hop
        else:
            return "symlink loop", False
        if not os.path.lexists(current):
            return f"dangling symlink to {self._relative(current) or current}", False
        if current.is_dir():
            return "symlink to a directory (not followed)", False
        return current


def build(source_dir: Path | str, *, use_cache: bool = True) -> Manifest:
    """The manifest of ``source_dir``; a missing or non-directory path is a SpecError."""
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
    cache = VerdictCache(root, enabled=use_cache)
    result = _Walk(root, cache).run()
    cache.save()
    return result


__all__ = ["IGNORE_FILES", "LeftOut", "Manifest", "build"]
