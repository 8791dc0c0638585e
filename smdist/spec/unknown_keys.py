""" "unknown key 'process_per_host'; did you mean 'processes_per_host'?" for pydantic's errors.

Pydantic's ``extra="forbid"`` reports each unknown key at its path ("Extra inputs are not
permitted") and goes on checking the other fields, which is what lets a job file's typos be
listed at once. It does not say what was meant. This module finds the model a path leads to
(through nested models, dict values and list items) and
words the error with the closest valid key and the full list.
"""

import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from smdist.errors import suggest


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for argument in typing.get_args(annotation):
        found.extend(_models_in(argument))
    return found


def _field(model: type[BaseModel], key: Any) -> Any:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return field
    return None


def model_at(
    root: type[BaseModel], loc: Sequence[int | str], chosen: Mapping[str, type[BaseModel]] = {}
) -> type[BaseModel] | None:
    """The model whose keys are checked at ``loc`` (the path without the unknown key).

    ``chosen``: the model that validated a top-level field its annotation does not name (a job's
    ``strategy`` is validated by the model its ``kind`` picks)."""
    candidates = [root]
    for depth, item in enumerate(loc):
        fields = [_field(model, item) for model in candidates]
        if depth == 0 and item in chosen:
            candidates = [chosen[str(item)]]
        elif any(field is not None for field in fields):
            candidates = [
                found
                for field in fields
                if field is not None
                for found in _models_in(field.annotation)
            ]
        # else a dict key or a list index: the same models hold below it
        if not candidates:
            return None
    return candidates[0] if len(candidates) == 1 else None


def _root(title: str) -> type[BaseModel] | None:
    from smdist.spec.base import StrictModel

    pending: list[type[BaseModel]] = [StrictModel]
    while pending:
        model = pending.pop()
        if model.__name__ == title:
            return model
        pending.extend(model.__subclasses__())
    return None


def unknown_key_message(
    title: str,
    loc: Sequence[int | str],
    key: str,
    chosen: Mapping[str, type[BaseModel]] = {},
) -> str:
    """The message for the unknown ``key`` found at ``loc`` while validating model ``title``."""
    root = _root(title)
    model = model_at(root, loc, chosen) if root is not None else None
    if model is None:
        return f"unknown key {key!r}"
    shown = sorted(field.alias or name for name, field in model.model_fields.items())
    close = suggest(str(key), shown, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key {key!r}; {hint}valid keys: {', '.join(shown)}"


__all__ = ["model_at", "unknown_key_message"]
