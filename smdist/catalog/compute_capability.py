"""CUDA compute capabilities: which GPUs a framework build's kernels run on.

A CUDA build of a framework carries machine code (cubins) for a list of compute capabilities
and, for some, PTX, written as PyTorch's ``TORCH_CUDA_ARCH_LIST`` writes them: ``"9.0"``,
``"12.0+PTX"``. NVIDIA's rules (CUDA C++ Programming Guide, "Binary Compatibility" and
"PTX Compatibility"): a cubin for X.y runs on a GPU of capability X.z with z >= y, within the
same major version only; PTX for X.y is compiled when loaded for any GPU of X.y or higher. A GPU
that neither covers fails at its first kernel with "no kernel image is available for execution
on the device". Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_CAPABILITY = re.compile(r"^(\d+)\.(\d)(\+PTX)?$")
PTX_SUFFIX = "+PTX"


def parse(text: str) -> tuple[int, int]:
    """``"8.6"`` -> (8, 6); ValueError for anything else (``"8.6+PTX"`` included)."""
    match = _CAPABILITY.match(text)
    if match is None or match.group(3):
        raise ValueError(f"{text!r} is not a compute capability such as 8.6")
    return int(match.group(1)), int(match.group(2))


def parse_entry(text: str) -> tuple[tuple[int, int], bool]:
    """One entry of a build's list: ``"12.0+PTX"`` -> ((12, 0), True)."""
    match = _CAPABILITY.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a compute capability such as 8.6 or 12.0+PTX")
    return (int(match.group(1)), int(match.group(2))), bool(match.group(3))


def runs_on(build: Iterable[str], capability: str) -> bool:
    """Whether a build carrying ``build`` (its list) has kernels for a GPU of ``capability``."""
    major, minor = parse(capability)
    for entry in build:
        (code_major, code_minor), ptx = parse_entry(entry)
        if code_major == major and code_minor <= minor:
            return True
        if ptx and (code_major, code_minor) <= (major, minor):
            return True
    return False


def span(build: Iterable[str]) -> str:
    """``["7.5", "8.0", "12.0+PTX"]`` -> ``"7.5 to 12.0 (PTX for 12.0)"``, for messages."""
    entries = [parse_entry(entry) for entry in build]
    if not entries:
        return "no GPU"
    shown = sorted(capability for capability, _ in entries)
    text = ", ".join(f"{major}.{minor}" for major, minor in shown)
    if len(shown) > 2:
        text = f"{shown[0][0]}.{shown[0][1]} to {shown[-1][0]}.{shown[-1][1]}"
    ptx = [f"{major}.{minor}" for (major, minor), has_ptx in entries if has_ptx]
    return text + (f" (PTX for {', '.join(ptx)})" if ptx else "")


__all__ = ["PTX_SUFFIX", "parse", "parse_entry", "runs_on", "span"]
