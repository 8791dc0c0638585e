"""Pydantic's validation errors as ``Problem`` values a person can act on.

Each error becomes one problem at its field's path (``strategy.processes_per_host``), with
pydantic's generic wording replaced by what would be valid, and an unknown key named with the
closest valid one (``unknown_keys``).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from smdist.errors import Problem, suggest
from smdist.spec.unknown_keys import root_model, unknown_key_message, walk

# A model-level rule about one of its fields (PydanticCustomError(FIELD_PROBLEM, message,
# {"key": field})): reported at that field's path, as a field validator's error is.
FIELD_PROBLEM = "field_problem"


def render_location(loc: Sequence[int | str]) -> str:
    """('strategy', 'processes_per_host') -> 'strategy.processes_per_host'; ('inputs', 0) ->
    'inputs[0]'."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def problems_from_validation_error(
    exc: ValidationError,
    prefix: str = "",
    chosen: Mapping[str, type[BaseModel]] = {},
    required: Mapping[str, str] = {},
) -> list[Problem]:
    """``chosen``: the models that validated top-level fields their annotation does not name
    (``unknown_keys.walk``), so that an unknown key there is worded with the valid ones.
    ``required``: what would be valid for a missing top-level key the caller knows better."""
    problems = []
    root = root_model(exc.title)
    for error in exc.errors(include_url=False):
        valid: str | None = None
        error_loc = tuple(error["loc"])
        extra = error["type"] == "extra_forbidden"
        walked = walk(root, error_loc[:-1] if extra else error_loc, chosen) if root else None
        tags = walked.tags if walked else frozenset()
        kept = tuple(item for depth, item in enumerate(error_loc) if depth not in tags)
        loc = ((prefix,) if prefix else ()) + kept
        if error["type"] in ("unknown_key", FIELD_PROBLEM):  # the key belongs in the path
            loc = loc + (error["ctx"]["key"],)
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        value = error.get("input")
        if error["type"] == "union_tag_invalid":
            tag, expected = str(error["ctx"]["tag"]), error["ctx"]["expected_tags"]
            close = suggest(tag.replace("-", "_").lower(), expected.replace("'", "").split(", "))
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            message = f"unknown {error['ctx']['discriminator'].strip(chr(39))} {tag!r}{hint}"
            value, valid = None, expected
        if extra:
            message = unknown_key_message(walked.model if walked else None, str(error_loc[-1]))
            value = None  # the key is the problem, not its value
        if error["type"] in ("missing", "model_type", "dict_type") or isinstance(value, dict):
            value = None
        message, plain_valid = _plain_words(error, message, required)
        problems.append(Problem(render_location(loc), message, value, valid or plain_valid))
    return problems


# Pydantic's generic messages, reworded with what would be valid (a custom message keeps its own).
_TYPES = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "dict_type": "a mapping of keys to values",
    "model_type": "a mapping of keys to values",
    "list_type": "a list",
}
_BOUNDS = {
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
}


def _plain_words(error: Any, message: str, required: Mapping[str, str]) -> tuple[str, str | None]:
    kind = error["type"]
    if kind == "missing":
        # The job's own keys by path; a nested model's ``name`` is not the job's name.
        key = error["loc"][-1] if len(error["loc"]) == 1 or error["loc"][-1] in _ANYWHERE else ""
        return "is required", {**_REQUIRED, **required}.get(str(key), "a value for this key")
    if kind in _TYPES:
        return "has the wrong type", _TYPES[kind]
    if kind in _BOUNDS:
        bound, words = _BOUNDS[kind]
        return "is out of range", f"{words} {error['ctx'][bound]}"
    if kind == "literal_error":
        return "is not one of the choices", str(error["ctx"]["expected"])
    if kind == "string_pattern_mismatch":
        return "does not have the expected form", f"text matching {error['ctx']['pattern']}"
    return message, None


_ANYWHERE = ("instance_type", "uri")  # keys of one model only, wherever it is nested
_REQUIRED = {
    "name": "a job name such as my-job (letters, digits, hyphens)",
    "cluster": "a mapping such as {instance_type: ml.g5.xlarge, instance_count: 2}",
    "instance_type": "a SageMaker training instance type such as ml.g5.xlarge",
    "uri": "s3://bucket/prefix or file:///local/path",
}
