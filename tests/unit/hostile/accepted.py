"""Values a user may pass as they are: shell-shaped strings in hyperparameters and environment.

A hyperparameter or environment value is data, not a command: every string except one holding
NUL is valid and must reach the training script byte-exactly, under every launcher. These jobs
validate (exit 0) and the plan carries each value unchanged (JSON-decoded, as the container
reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hostile.build import EXAMPLE_NAMES, edited, render, rotate

SHELL_VALUES: dict[str, Any] = {
    "env-assignment": "CUDA_VISIBLE_DEVICES=';touch /tmp/smdist-hostile;#'",
    "subshell": "$(touch /tmp/smdist-hostile)",
    "backticks": "`touch /tmp/smdist-hostile`",
    "semicolon": "; rm -rf / #",
    "and-or": "a && b || c",
    "pipe": "a | tee /tmp/smdist-hostile",
    "single-quotes": "'single'",
    "double-quotes": '"double"',
    "apostrophe": "it's",
    "backslashes": '\\"escaped\\\\',
    "newline": "line1\nline2",
    "carriage-return": "a\rb",
    "tab": "tab\there",
    "braced-variable": "${HOME}",
    "variable": "$HOME",
    "flag-shaped": "--flag=value",
    "short-flag": "-x",
    "redirect": "> /tmp/smdist-hostile 2>&1",
    "input-redirect": "< /etc/passwd",
    "glob": "*",
    "tilde": "~",
    "history": "!!",
    "comment": "#comment",
    "japanese": "日本語",
    "rtl-override": "\u202eabc",
    "zero-width": "a\u200bb",
    "emoji": "\U0001f680",
    "format-string": "%s %d {} {0}",
    "template": "{{ jinja }}",
    "ansi-escape": "\x1b[31mred",
    "empty": "",
    "spaces": "  padded  ",
    "leading-zero": "007",
    "true-as-text": "true",
    "null-as-text": "null",
    "lone-quote": "'",
    "lone-backslash": "\\",
    "yaml-shaped": "key: [value, *alias]",
    "json-shaped": '{"a": [1, 2]}',
}
# JSON-encoded, this is exactly SageMaker's 2,500-character limit.
SHELL_VALUES["at-the-limit"] = "x" * 2498
STRUCTURED_VALUES: dict[str, Any] = {
    "list-of-shell": ["a;b", "$(id)", "`id`"],
    "mapping-of-shell": {"cmd": "`id`", "env": "A=';touch x;#'"},
}


@dataclass(frozen=True)
class Accepted:
    """A job that must validate; ``where`` is hyperparameters or environment, ``name`` its key."""

    id: str
    data: bytes
    where: str
    name: str
    value: Any
    example: str


def _case(where: str, key: str, value: Any, index: int) -> Accepted:
    on = rotate(EXAMPLE_NAMES, index)
    name = "note" if where == "hyperparameters" else "NOTE"
    job = render(edited(on, {(where, name): value}))
    return Accepted(f"{where}-{key}", job, where, name, value, on)


def _all() -> list[Accepted]:
    cases = [_case("hyperparameters", k, v, i) for i, (k, v) in enumerate(SHELL_VALUES.items())]
    cases += [
        _case("hyperparameters", k, v, i + 3) for i, (k, v) in enumerate(STRUCTURED_VALUES.items())
    ]
    # The environment's own limit is 512 characters, so the at-the-limit string stays out.
    cases += [
        _case("environment", k, v, i + 1)
        for i, (k, v) in enumerate(SHELL_VALUES.items())
        if k != "at-the-limit"
    ]
    return cases


ACCEPTED: list[Accepted] = _all()
