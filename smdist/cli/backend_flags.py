"""Command-line flags made from the backends' option models, so that a backend's options reach
``smdist run`` and ``smdist submit`` without the command line naming a single one.

Each option a backend declares for the command line becomes a flag (``--field-name``, or the
spelling its ``Flag`` gives) whose ``--help`` is the field's description; a flag is left unset
(None) unless given, so the backend's own default applies. A flag given for a backend that does
not take it is refused naming the backends that do: nothing set is silently dropped.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from smdist.backends.options import Flag
from smdist.errors import OPTION, Problem, SpecError


@dataclass(frozen=True)
class BackendFlag:
    field: str
    names: str
    annotation: Any
    help: str
    hidden: bool
    backends: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The flag as a user types it (its positive side)."""
        return self.names.split("/")[0]


def _flag_of(field: Any) -> Flag:
    return next((m for m in field.metadata if isinstance(m, Flag)), Flag())


def _cli_type(annotation: Any) -> Any:
    """The type the command line parses: the field's, optional, without pydantic's constraints."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = _cli_type(inner[0])
    return annotation


def flags(backends: Iterable[Any]) -> list[BackendFlag]:
    """Every command-line option of ``backends``, one flag per option name."""
    found: dict[str, BackendFlag] = {}
    for backend in backends:
        for name, field in backend.Options.model_fields.items():
            flag = _flag_of(field)
            if not flag.cli:
                continue
            text = field.description or ""
            if field.default not in (None, False) and "default" not in text:
                text += f" (default: {field.default})"
            if name in found:
                found[name] = _shared(found[name], backend.name, text)
                continue
            cli_type = _cli_type(field.annotation)
            names = flag.names or f"--{name.replace('_', '-')}"
            if cli_type is bool and "/" not in names and flag.names is None:
                names = f"{names}/--no-{name.replace('_', '-')}"
            found[name] = BackendFlag(name, names, cli_type, text, flag.hidden, (backend.name,))
    return list(found.values())


def _shared(known: BackendFlag, backend: str, text: str) -> BackendFlag:
    """``known`` taken by ``backend`` too; where the backends describe it differently, the help
    says each one's meaning after its name."""
    help_text = known.help
    if text != known.help and f"{backend}: " not in help_text:
        if len(known.backends) == 1:
            help_text = f"{known.backends[0]}: {help_text}"
        help_text = f"{help_text}; {backend}: {text}"
    return BackendFlag(
        known.field, known.names, known.annotation, help_text, known.hidden,
        (*known.backends, backend),
    )  # fmt: skip


def parameters(known: list[BackendFlag], several: bool) -> list[inspect.Parameter]:
    """typer parameters for ``known`` flags, each unset by default; where the command starts
    several backends, a flag that not all of them take says which do."""
    every = {name for flag in known for name in flag.backends}
    made = []
    for flag in known:
        only = several and set(flag.backends) != every
        text = flag.help + (f" (--backend {' or '.join(flag.backends)})" if only else "")
        option = typer.Option(*flag.names.split(" "), help=text, hidden=flag.hidden,
                              show_default=False)  # fmt: skip
        made.append(
            inspect.Parameter(
                flag.field,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[flag.annotation | None, option],
            )
        )
    return made


def with_flags(command: Callable[..., Any], known: list[BackendFlag], several: bool) -> Any:
    """``command`` with the backends' flags added to its own parameters (typer reads the
    signature); the command receives them in its ``backend_values`` keyword, as a dict."""
    own = [
        p
        for p in inspect.signature(command, eval_str=True).parameters.values()
        if p.name != "backend_values"
    ]
    extra = {flag.field for flag in known}

    def wrapper(**given: Any) -> Any:
        values = {name: given.pop(name) for name in list(given) if name in extra}
        return command(backend_values=values, **given)

    wrapper.__name__, wrapper.__doc__ = command.__name__, command.__doc__
    wrapper.__signature__ = inspect.Signature([*own, *parameters(known, several)])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {}
    return wrapper


def options_for(backend: Any, values: dict[str, Any], known: list[BackendFlag]) -> Any:
    """``backend``'s options from the flags given; SpecError for a flag it does not take."""
    by_field = {flag.field: flag for flag in known}
    given = {name: value for name, value in values.items() if value is not None}
    wrong = [name for name in given if name not in backend.Options.model_fields]
    if wrong:
        raise SpecError(
            [
                Problem(
                    by_field[name].shown,
                    f"applies to --backend {' or '.join(by_field[name].backends)} only",
                    given[name],
                    f"leave it out with --backend {backend.name}",
                )
                for name in wrong
            ],
            OPTION,
        )
    return backend.options(given, named=lambda name: by_field[name].shown)
