"""Framework version strings (``major.minor`` or ``major.minor.patch``): parsing and ordering."""

from __future__ import annotations

import re

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(version: str) -> tuple[int, int, int | None]:
    """``"2.3.1"`` -> (2, 3, 1), ``"2.3"`` -> (2, 3, None); ValueError for anything else."""
    match = _VERSION_RE.match(version.strip()) if isinstance(version, str) else None
    if match is None:
        raise ValueError(
            f"Version {version!r} is not a framework version; use major.minor or "
            "major.minor.patch, for example '2.3' or '2.3.0'."
        )
    major, minor, patch = match.groups()
    return int(major), int(minor), None if patch is None else int(patch)


def version_key(version: str) -> tuple[int, int, int]:
    """A sort key for ``version``: a missing patch level counts as 0."""
    major, minor, patch = parse_version(version)
    return major, minor, patch or 0


def same_release(version: tuple[int, int, int | None], listed: tuple[int, int, int | None]) -> bool:
    """Whether parsed ``version`` is the release ``listed`` names."""
    if version[:2] != listed[:2]:
        return False
    # A version without a patch level stands for the whole minor release.
    return version[2] is None or listed[2] is None or version[2] == listed[2]


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, equal to or newer than ``b``.

    A missing patch level counts as 0, so ``compare_versions("2.3", "2.3.0") == 0``.
    """
    key_a, key_b = version_key(a), version_key(b)
    return (key_a > key_b) - (key_a < key_b)
