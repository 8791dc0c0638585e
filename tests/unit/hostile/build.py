"""How a hostile-input case becomes a job file: an example with one edit, or raw bytes.

Cases start from the shipped examples so that each one differs from a job smdist accepts in
exactly the way the case names; whatever else the examples become, the edit stays the point.
A case that needs files on disk (a source_dir, a symlink) gets them from ``make_workspace``.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES_DIR.glob("*.yaml"))
DELETE = object()  # an edit value meaning "remove this key"
HOME = "@HOME@"  # replaced by the home directory of whoever runs the test

# The line numbers, byte offsets or positions a file-level message must give.
WHERE = r"(line|offset|byte|position|column)\D{0,12}\d+"
BOTH_LINES = r"line\D{0,12}\d+\D+\d+"


@dataclass(frozen=True)
class Case:
    """One job file and what smdist must say about it.

    ``fields``: the field paths a refusal may name (any one of them); empty for file-level
    problems (bad bytes, YAML structure). ``says``: a regular expression the refusal's text
    must match besides (a line number, a byte offset).
    """

    id: str
    data: bytes
    fields: tuple[str, ...] = ()
    says: str | None = None
    group: str = ""
    tags: frozenset[str] = field(default_factory=frozenset)

    def job_bytes(self) -> bytes:
        return self.data.replace(HOME.encode(), str(Path.home()).encode())


def example(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES_DIR / f"{name}.yaml").read_text())


def render(data: Any) -> bytes:
    # allow_unicode keeps look-alikes and RTL marks literal; YAML escapes control characters.
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000).encode()


def edited(name: str, edits: dict[str, Any]) -> dict[str, Any]:
    """``example(name)`` with each dotted path set (``DELETE`` removes the key).

    A dotted path is split on the first dots only as far as the target exists, so a key that
    itself contains dots or odd characters is written as ``("hyperparameters", "a.b")``.
    """
    data = copy.deepcopy(example(name))
    for where, value in edits.items():
        parts = list(where) if isinstance(where, tuple) else where.split(".")
        target = data
        for key in parts[:-1]:
            if not isinstance(target.get(key), dict):
                target[key] = {}
            target = target[key]
        if value is DELETE:
            target.pop(parts[-1], None)
        else:
            target[parts[-1]] = copy.deepcopy(value)
    return data


def refuse(
    group: str,
    id: str,
    fields: str | tuple[str, ...],
    edits: dict[str, Any],
    on: str = "pytorch_ddp",
    says: str | None = None,
) -> Case:
    """A case built from example ``on`` with ``edits`` applied; ``fields`` must be named."""
    names = (fields,) if isinstance(fields, str) else fields
    return Case(f"{group}-{id}", render(edited(on, edits)), names, says, group)


def refuse_bytes(
    group: str, id: str, fields: str | tuple[str, ...], data: bytes, says: str | None = None
) -> Case:
    """A case whose job file is exactly ``data`` (duplicate keys, bad bytes, alias bombs)."""
    names = (fields,) if isinstance(fields, str) else fields
    return Case(f"{group}-{id}", data, tuple(n for n in names if n), says, group)


def example_bytes(name: str = "pytorch_ddp") -> bytes:
    return (EXAMPLES_DIR / f"{name}.yaml").read_bytes()


def make_workspace(root: Path) -> None:
    """The files disk checks look at: a source_dir, a script outside it, escaping symlinks."""
    source = root / "src"
    source.mkdir()
    (source / "train.py").write_text("print('training')\n")
    (root / "outside.py").write_text("print('outside the source_dir')\n")
    (root / "a_file.txt").write_text("not a directory\n")
    os.symlink("../outside.py", source / "escape.py")
    os.symlink("/", root / "root_link")
    os.symlink(str(Path.home()), root / "home_link")


def rotate(names: list[str], index: int) -> str:
    """Spread cases over every launcher: the index-th example, cyclically."""
    return names[index % len(names)]
