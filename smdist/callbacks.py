"""One callback that calls several: a caller's own beside smdist's (progress lines, bars)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def each(*callbacks: Callable[[T], None] | None) -> Callable[[T], None] | None:
    """A callback calling every one given, in order; None when none is given."""
    chosen = [callback for callback in callbacks if callback is not None]
    if not chosen:
        return None

    def call(value: T) -> None:
        for callback in chosen:
            callback(value)

    return call
