"""A backend's options: one pydantic model per backend, the one source of its settings.

``smdist.fit(options={...})`` validates against it, the command line makes its flags from it
(``smdist.cli.backend_flags``), ``--help`` shows its descriptions, and an unknown or invalid
option is refused by it, naming the option, the value and what is valid, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from smdist.errors import OPTION, Problem, SpecError


@dataclass(frozen=True)
class Flag:
    """How an option appears on the command line (``Annotated`` metadata of its field).

    ``names``: the flag's spelling when it is not ``--field-name`` (a yes/no option may name
    both sides, ``--use-gpus/--cpu``); ``hidden``: kept out of ``--help``; ``cli=False``: a
    Python-only option (a console, a boto3 session).
    """

    names: str | None = None
    hidden: bool = False
    cli: bool = True


PYTHON_ONLY = Flag(cli=False)

# Options several backends take, meaning the same on each.
Region = Annotated[str | None, Field(description="AWS region (default: the AWS configuration)")]
PollSeconds = Annotated[
    float,
    Field(gt=0, description="seconds between status polls"),
    Flag(names="--poll", hidden=True),
]
JobName = Annotated[
    str | None, Field(description="instead of <spec name>-<time>-<random>"), PYTHON_ONLY
]


class BackendOptions(BaseModel):
    """The base of every backend's options: strict, frozen, every field described."""

    # defer_build: a backend's validator is built when its options are first read; a command
    # reads one backend's, and every backend's model is imported for its flags.
    model_config = ConfigDict(
        extra="forbid", frozen=True, arbitrary_types_allowed=True, defer_build=True
    )
    # Options for which None is a value of its own rather than "the default" (a stall
    # timeout of None: never).
    none_is_a_value: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def read(
        cls,
        backend: str,
        given: Mapping[str, Any],
        *,
        named: Callable[[str], str] = "options.{}".format,
    ) -> Any:
        """The options ``given`` for ``backend``, validated; SpecError naming each problem.

        ``None`` stands for "the default", as an unset flag does on the command line.
        """
        known = sorted(cls.model_fields)
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise SpecError(
                [
                    Problem(
                        named(name),
                        f"is not an option of the {backend} backend",
                        None,
                        ", ".join(known),
                    )
                    for name in unknown
                ],
                OPTION,
            )
        values = {
            name: value
            for name, value in given.items()
            if value is not None or name in cls.none_is_a_value
        }
        try:
            return cls(**values)
        except ValidationError as error:
            raise SpecError(
                [_problem(cls, named, detail) for detail in error.errors()], OPTION
            ) from None

    def given(self) -> dict[str, Any]:
        """The options that were set, as keywords (what a backend's ``launch`` takes)."""
        return {name: getattr(self, name) for name in self.model_fields_set}


# What a constraint pydantic reports allows, in the user's words.
_ALLOWED = {
    "greater_than_equal": "a number >= {ge}",
    "greater_than": "a number > {gt}",
    "less_than_equal": "a number <= {le}",
    "bool_type": "True or False",
    "bool_parsing": "True or False",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a text",
}


def _problem(model: type[BaseModel], named: Callable[[str], str], detail: Any) -> Problem:
    name = ".".join(str(part) for part in detail.get("loc", ()) if not isinstance(part, int))
    field = model.model_fields.get(name.split(".")[0])
    allowed = _ALLOWED.get(detail.get("type", ""))
    if allowed is not None:
        valid = allowed.format(**detail.get("ctx", {}))
    else:
        valid = field.description if field is not None else None
    return Problem(named(name), detail.get("msg", "is invalid"), detail.get("input"), valid)
