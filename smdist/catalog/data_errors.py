"""The error a malformed catalogue data file raises, and the check that raises it."""

from __future__ import annotations


class CatalogError(ValueError):
    """A catalogue data file is malformed; the message names the file, entry and key."""


def require(condition: bool, message: str) -> None:
    """Raise ``CatalogError(message)`` unless ``condition`` holds."""
    if not condition:
        raise CatalogError(message)
