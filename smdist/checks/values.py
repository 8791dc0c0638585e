"""Checks on the text of every value a job carries: NUL characters and credentials.

A NUL cannot travel in a process's argv or environment, in JSON to most services, or in a file
name; Python raises deep inside ``subprocess`` or ``pathlib`` when it meets one. So it is
refused here, anywhere in the spec, naming the field, before anything uses the value.

Credentials in hyperparameters or environment values are visible in the SageMaker console and
DescribeTrainingJob; they are recognised by the same content rules that keep secrets out of the
code tarball (``smdist.checks.secrets``), plus bare AWS access key ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from smdist.checks.secret_content import scan_bytes
from smdist.errors import Problem

NUL = "\x00"
# A bare access key id or a private-key header is enough in a value, unlike in a file.
_SECRET_TEXT = re.compile(
    r"((AKIA|ASIA)[0-9A-Z]{16}|-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----)"
)


def _walk(value: Any, path: str) -> Iterator[tuple[str, str, bool]]:
    """(path, text, is_key) for every string in ``value``, keys included."""
    if isinstance(value, str):
        yield path, value, False
    elif isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                yield path or "(top level)", key, True
            yield from _walk(item, child)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")


def nul_problems(data: Any) -> list[Problem]:
    """A Problem for every string (or mapping key) that holds a NUL character."""
    problems = []
    for path, text, is_key in _walk(data, ""):
        if NUL in text:
            where = "a key" if is_key else "the value"
            shown = text.replace(NUL, "\\0")
            problems.append(
                Problem(
                    path.replace(NUL, "\\0"),
                    f"{where} {shown!r} holds a NUL character (byte 0), which no process "
                    "argument, environment variable or file name can carry",
                    None,
                    "the same text without NUL characters",
                )
            )
    return problems


def looks_like_secret(text: str) -> bool:
    """True when ``text`` holds a credential: a key id, a private key, a known token shape."""
    if _SECRET_TEXT.search(text):
        return True
    return scan_bytes(text.encode("utf-8", "surrogatepass"))[0] is not None
