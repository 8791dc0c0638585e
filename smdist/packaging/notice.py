"""A large upload is announced before it happens, naming where its bytes are.

Nothing is refused for size alone: a 2 GB ``source_dir`` may be what the user means (a
tokenizer, a small dataset). But a project directory shipped whole is the usual cause of a slow
submit, so above either threshold the dry run and ``smdist submit`` say how big the code is,
which top-level directories hold most of it, and how to leave one out.
"""

from __future__ import annotations

from smdist.packaging.manifest import Manifest

LARGE_UPLOAD_BYTES = 100_000_000
LARGE_UPLOAD_FILES = 10_000
_SHOWN = 5


def human_size(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return ""  # pragma: no cover


def largest_directories(found: Manifest, count: int = _SHOWN) -> list[tuple[str, int, int]]:
    """(top-level directory, bytes, files) of what ships, the largest first."""
    totals: dict[str, list[int]] = {}
    for relative, size in found.sizes.items():
        top = relative.split("/", 1)[0] + "/" if "/" in relative else "./ (top-level files)"
        entry = totals.setdefault(top, [0, 0])
        entry[0] += size
        entry[1] += 1
    ranked = sorted(totals.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
    return [(name, size, files) for name, (size, files) in ranked[:count]]


def large_upload_lines(found: Manifest) -> list[str]:
    """Lines announcing a large code upload, or none below the thresholds."""
    files, size = len(found.shipped), found.shipped_bytes
    if size < LARGE_UPLOAD_BYTES and files < LARGE_UPLOAD_FILES:
        return []
    lines = [
        f"note: large code upload: {files} files, {human_size(size)} from {found.root} "
        f"(announced above {human_size(LARGE_UPLOAD_BYTES)} or {LARGE_UPLOAD_FILES} files); "
        "the largest directories:"
    ]
    lines.extend(
        f"  {name:<32} {human_size(nbytes):>10}  {count} file{'' if count == 1 else 's'}"
        for name, nbytes, count in largest_directories(found)
    )
    lines.append(
        "  to leave a directory out, add a line such as 'data/' to .smdistignore in source_dir"
        " (data belongs in an input channel: inputs: {train: s3://...})"
    )
    return lines


__all__ = [
    "LARGE_UPLOAD_BYTES",
    "LARGE_UPLOAD_FILES",
    "human_size",
    "large_upload_lines",
    "largest_directories",
]
