"""Errors and warnings that tell a user what to fix: the field path, the bad value, what is valid.

Pydantic's own errors are turned into the same shape (``smdist.spec.validation_errors``) so that
a YAML typo, a wrong type and a cluster mismatch all read alike on the command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One finding about a spec: where, what was given, what would be valid."""

    path: str
    message: str
    value: Any = None
    valid: str | None = None
    severity: Severity = "error"

    def __str__(self) -> str:
        message = _escaped(self.message, keep_newlines=True)
        text = f"{_escaped(self.path)}: {message}" if self.path else message
        if self.value is not None and repr(self.value) not in self.message:
            text += f" (got {ascii(self.value)})"
        if self.valid:
            text += f"; valid: {self.valid}"
        return text


def _escaped(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every character outside printable ASCII as its escape (``\\u202e``): a
    field path, or a value a message quotes, may come from a file and hold a right-to-left
    override, a control character or a look-alike (Cyrillic ``\\u0430`` for ``a``), which must
    show as what it is. smdist's own wording is ASCII."""
    return "".join(
        char if " " <= char <= "~" or (keep_newlines and char == "\n") else ascii(char)[1:-1]
        for char in text
    )


class SetupError(Exception):
    """Something a user must fix in the job or on this machine before the job can run.

    The command line's one exit-code rule rests on this class: a SetupError (an invalid spec,
    a missing mpirun, Docker or framework, unreadable input, missing AWS credentials) is exit
    2 with a one-line message; only a job that ran and failed is exit 1.
    """


# One header per kind of error, so that the first line says where to look.
SPEC = "invalid job spec"  # the job file, or what a command line set in it
OPTION = "invalid option"  # a command-line option that is not a job setting
NO_SUCH_JOB = "no such job"  # a job name or directory that names no job
CANNOT_RUN_HERE = "cannot run here"  # this machine or account: SDK, Docker, region


class SpecError(SetupError, ValueError):
    """A job spec that must not be submitted. ``problems`` lists every error found; ``header``
    says which kind of error it is (``SPEC`` unless the problems are about something else)."""

    def __init__(self, problems: Sequence[Problem], header: str = SPEC) -> None:
        self.problems = list(problems)
        self.header = header
        lines = [str(p) for p in self.problems]
        head = header if len(lines) != 1 else f"{header}: {lines[0]}"
        super().__init__(head if len(lines) == 1 else head + ":\n  - " + "\n  - ".join(lines))


def suggest(value: str, choices: Iterable[str], n: int = 3) -> list[str]:
    import difflib  # only on the error path: keeps `import smdist` light

    return difflib.get_close_matches(value, list(choices), n=n, cutoff=0.6)
