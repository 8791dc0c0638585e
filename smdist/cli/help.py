"""``--help`` that shows a flag as a flag.

Typer 0.29 gives every option a type column, flags included: ``--wait <bool>`` reads as if the
flag took a value. A flag with an empty metavar shows none, in every Typer version, so the
commands and the group built here clear it for their flags (``--help`` among them).
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


def plain_flags(params: list[Any]) -> list[Any]:
    """``params`` with every flag's (unset) metavar made empty: no ``<bool>`` beside it."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class PlainFlagsCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return plain_flags(super().get_params(ctx))


class PlainFlagsGroup(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return plain_flags(super().get_params(ctx))


class Typer(typer.Typer):
    """A ``typer.Typer`` whose group and commands show flags without a type."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("cls", PlainFlagsGroup)
        super().__init__(**options)

    def command(self, *args: Any, **options: Any) -> Any:
        options["cls"] = options.get("cls") or PlainFlagsCommand
        return super().command(*args, **options)
