""" "unknown key 'process_per_host'; did you mean 'processes_per_host'?" for pydantic's errors.

Pydantic's ``extra="forbid"`` reports each unknown key at its path ("Extra inputs are not
permitted") and goes on checking the other fields, which is what lets a job file's typos be
listed at once. It does not say what was meant. This module follows a path through the models'
annotations (nested models, dict values, list items, tagged unions) to the model whose keys are
checked there, and words the error with the closest valid key and the full list. The same walk
finds the union tags pydantic writes into a path (``tuning.parameters.lr.continuous.min``):
users never wrote them, so they are left out of the path a problem names.
"""

import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel

from smdist.errors import suggest
from smdist.spec.base import StrictModel


@dataclass(frozen=True)
class PathWalk:
    """Where a path leads: the model holding the keys at its end (None when it is no model or
    not known) and the positions in the path that are union tags."""

    model: type[BaseModel] | None
    tags: frozenset[int]


def walk(
    root: type[BaseModel], loc: Sequence[int | str], chosen: Mapping[str, type[BaseModel]] = {}
) -> PathWalk:
    """Follow ``loc`` from ``root``. ``chosen``: the model that validated a top-level field its
    annotation does not name (a job's ``strategy`` is validated by the model its ``kind`` picks).
    """
    annotation: Any = root
    tags: set[int] = set()
    for depth, item in enumerate(loc):
        annotation = _unwrapped(annotation)
        members = _models_in(annotation)
        if len(members) > 1:  # a tagged union: the tag comes first
            tagged = [m for m in members if item in _tags(m) or item == m.__name__]
            if len(tagged) != 1:
                return PathWalk(None, frozenset(tags))
            tags.add(depth)
            annotation = tagged[0]
        elif _is_model(annotation):
            field = _field(annotation, item)
            if depth == 0 and item in chosen:
                annotation = chosen[str(item)]
            elif field is None:
                return PathWalk(None, frozenset(tags))
            else:
                annotation = field.annotation
        elif typing.get_origin(annotation) in (dict, Mapping, list, tuple, set, Sequence):
            annotation = typing.get_args(annotation)[-1] if typing.get_args(annotation) else Any
        else:
            return PathWalk(None, frozenset(tags))
    annotation = _unwrapped(annotation)
    return PathWalk(annotation if _is_model(annotation) else None, frozenset(tags))


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _unwrapped(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` metadata and without ``None`` in a union."""
    while True:
        if typing.get_origin(annotation) is Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        if _is_union(annotation) and len(arguments) == 1:
            annotation = arguments[0]
            continue
        return annotation


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models of a union (each member unwrapped); empty for anything else."""
    if not _is_union(annotation):
        return []
    members = [_unwrapped(a) for a in typing.get_args(annotation) if a is not type(None)]
    return [member for member in members if _is_model(member)]


def _tags(model: type[BaseModel]) -> set[str]:
    """What a tagged union picks ``model`` by: its single-valued string ``Literal`` fields."""
    found = set()
    for field in model.model_fields.values():
        values = typing.get_args(field.annotation)
        if typing.get_origin(field.annotation) is Literal and len(values) == 1:
            found.update(value for value in values if isinstance(value, str))
    return found


def _field(model: type[BaseModel], key: Any) -> Any:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return field
    return None


def root_model(title: str) -> type[BaseModel] | None:
    """The smdist model named ``title`` (a ValidationError's title)."""
    pending: list[type[BaseModel]] = [StrictModel]
    while pending:
        model = pending.pop()
        if model.__name__ == title:
            return model
        pending.extend(model.__subclasses__())
    return None


def unknown_key_message(model: type[BaseModel] | None, key: str) -> str:
    """The message for the unknown ``key`` among ``model``'s keys (None: not known)."""
    if model is None:
        return f"unknown key {key!r}"
    shown = sorted(field.alias or name for name, field in model.model_fields.items())
    close = suggest(str(key), shown, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key {key!r}; {hint}valid keys: {', '.join(shown)}"


__all__ = ["PathWalk", "root_model", "unknown_key_message", "walk"]
