"""The paths a job names, checked against this machine's disk before anything is packed or run.

A spec can be well-formed and still name a ``source_dir`` that is not there, an entry point
outside it (``/etc/passwd``, ``../x.py``, a symlink out), or a ``file://`` input that does not
exist; such a job used to fail only after its code was packed and uploaded. Planning is pure
(no I/O), so these checks run where reading the disk is expected: ``smdist.spec.job.load`` and
``smdist.fit``. They return ``Problem`` values and never raise: an unreadable path (``/proc``
under ``source_dir: /``) is a problem to report, not a ``PermissionError``.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from smdist.errors import Problem

if TYPE_CHECKING:
    from smdist.spec.job import JobSpec
    from smdist.spec.sections import Code

_SOURCE_DIR = "code.source_dir"
_ENTRY_POINT = "code.entry_point"
_SHOWN_SCRIPTS = 10  # scripts listed as valid when the entry point is missing


def check_paths(
    spec: JobSpec, home: Path | None = None, file_inputs_here: bool = True
) -> list[Problem]:
    """Every problem with the paths in ``spec``; ``home`` defaults to the user's home.
    ``file_inputs_here`` False: ``file://`` channels name a cluster's folders, not this
    machine's, and are left to the backend."""
    problems = check_code_paths(spec.code, spec.entry_point, home)
    for channel, source in spec.inputs.items() if file_inputs_here else ():
        if source.uri.startswith("file://") and not os.path.exists(file_uri_path(source.uri)):
            problems.append(
                Problem(
                    f"inputs.{channel}.uri",
                    "does not exist on this machine",
                    source.uri,
                    "an existing file or directory, as file:///absolute/path",
                )
            )
    if spec.output_path and spec.output_path.startswith("file://"):
        problems += _output_path(spec.output_path)
    return problems


def check_code_paths(code: Code, effective: str | None, home: Path | None = None) -> list[Problem]:
    """The problems of ``code.source_dir`` and the script it must hold: ``effective``, the
    user's entry point or the strategy's ready one (None: not known, as for a job whose
    strategy is invalid; then only a given entry point is looked for)."""
    if code.source_dir is None:
        return _ready_entry_point(code.entry_point)
    root, problems = _source_dir(code.source_dir, home)
    if root is not None and effective is not None:
        problems += _entry_point_in(root, code.entry_point, effective)
    return problems


def file_uri_path(uri: str) -> Path:
    """``file:///data/x`` -> /data/x (``file://data`` is relative to the working directory)."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.netloc + parsed.path)).expanduser()


def ready_entry_points() -> list[str]:
    """The scripts smdist ships (``entry_points/*.py``), usable without a source_dir."""
    # smdist.entry_points exists only in an installed smdist (pyproject maps entry_points/).
    # lazy: a job with its own source_dir is checked without it
    import smdist.entry_points

    folder = Path(smdist.entry_points.__file__).parent
    return sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")


# ---- source_dir ---------------------------------------------------------------------------
def _source_dir(given: str, home: Path | None) -> tuple[Path | None, list[Problem]]:
    """The resolved directory, or None with the reason it cannot be shipped."""
    valid = "the directory holding your training code, e.g. ./src"
    if "\x00" in given:
        return None, [Problem(_SOURCE_DIR, "contains a NUL character", given, valid)]
    try:
        root = Path(given).expanduser().resolve(strict=True)
    except FileNotFoundError:
        return None, [Problem(_SOURCE_DIR, "does not exist", given, valid)]
    except (OSError, RuntimeError, ValueError) as exc:  # permission, symlink loop, ...
        return None, [Problem(_SOURCE_DIR, f"cannot be read: {_reason(exc)}", given, valid)]
    if not root.is_dir():
        return None, [Problem(_SOURCE_DIR, "is not a directory", given, valid)]
    if root == Path(root.anchor):
        return None, [
            Problem(_SOURCE_DIR, "is the root directory: all of it would be packed", given, valid)
        ]
    home_dir = _home(home)
    if home_dir is not None and (root == home_dir or root in home_dir.parents):
        what = "is your home directory" if root == home_dir else "holds your home directory"
        return None, [Problem(_SOURCE_DIR, f"{what}: all of it would be packed", given, valid)]
    if not os.access(root, os.R_OK | os.X_OK):
        return None, [Problem(_SOURCE_DIR, "cannot be read (permission denied)", given, valid)]
    return root, []


def _home(home: Path | None) -> Path | None:
    try:
        return (home or Path.home()).resolve()
    except (
        OSError,
        RuntimeError,
        KeyError,
        ValueError,
    ):  # no HOME and no passwd entry: nothing to compare
        return None


# ---- entry_point --------------------------------------------------------------------------
def _ready_entry_point(given: str | None) -> list[Problem]:
    """Without a source_dir the entry point must be one of smdist's ready scripts."""
    if given is None:
        return []
    ready = ready_entry_points()
    if given in ready:
        return []
    return [
        Problem(
            _ENTRY_POINT,
            "is not one of smdist's ready scripts, and no code.source_dir holds it",
            given,
            f"set code.source_dir to the directory holding it, or one of: {', '.join(ready)}",
        )
    ]


def _entry_point_in(root: Path, given: str | None, effective: str) -> list[Problem]:
    """``effective`` (the user's entry point, or the strategy's ready one) is a file in ``root``."""
    if given is None:
        message = (
            f"is not set, so the strategy's ready script {effective!r} is looked for in "
            f"{root} and is not there"
        )
        if _is_file_inside(root, effective):
            return []
        return [Problem(_ENTRY_POINT, message, None, "the script to run, e.g. train.py")]
    if "\x00" in given:
        return [Problem(_ENTRY_POINT, "contains a NUL character", given, _inside(root))]
    relative = PurePosixPath(given)
    if relative.is_absolute() or Path(given).is_absolute():
        return [Problem(_ENTRY_POINT, "is an absolute path", given, _inside(root))]
    if ".." in relative.parts:
        return [Problem(_ENTRY_POINT, "climbs out with '..'", given, _inside(root))]
    try:
        target = (root / given).resolve(strict=True)
    except FileNotFoundError:
        return [Problem(_ENTRY_POINT, f"is not a file in {root}", given, _scripts(root))]
    except (OSError, RuntimeError, ValueError) as exc:
        return [Problem(_ENTRY_POINT, f"cannot be read: {_reason(exc)}", given, _inside(root))]
    if not target.is_relative_to(root):
        return [
            Problem(
                _ENTRY_POINT,
                f"is a symlink to {target}, outside code.source_dir",
                given,
                _inside(root),
            )
        ]
    if not target.is_file():
        return [Problem(_ENTRY_POINT, f"is not a file in {root}", given, _scripts(root))]
    return []


def _is_file_inside(root: Path, relative: str) -> bool:
    try:
        target = (root / relative).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return False
    return target.is_relative_to(root) and target.is_file()


def _inside(root: Path) -> str:
    return f"a path relative to code.source_dir ({root}), e.g. train.py"


def _scripts(root: Path) -> str:
    """What the entry point could be: the Python files at the top of ``root``."""
    try:
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".py") and e.is_file())
    except OSError:
        names = []
    if not names:
        return _inside(root)
    shown = ", ".join(names[:_SHOWN_SCRIPTS]) + (", ..." if len(names) > _SHOWN_SCRIPTS else "")
    return f"a script in {root}: {shown}"


# ---- output_path --------------------------------------------------------------------------
def _output_path(uri: str) -> list[Problem]:
    path = file_uri_path(uri)
    if os.path.exists(path) and not os.path.isdir(path):
        return [Problem("output_path", "is a file, not a directory", uri, _output_valid())]
    if not os.path.isdir(path.parent):
        return [
            Problem(
                "output_path",
                f"its parent directory {path.parent} does not exist",
                uri,
                _output_valid(),
            )
        ]
    return []


def _output_valid() -> str:
    return "a directory, or a new one inside an existing directory, as file:///absolute/path"


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
