"""Training job names that do not collide, even for submissions in the same second.

SageMaker job names are unique per account and region. The SDK appends a timestamp with
one-second resolution, so two quick submissions (a CI matrix, a notebook loop) collide. smdist
appends ``-YYMMDD-HHMMSS-xxxx`` (19 characters): readable time plus four random base-36
characters (1.7 million per second), never repeated within one process.
"""

from __future__ import annotations

import secrets
import string
import threading
import time
from collections.abc import Callable
from typing import TypeVar

SUFFIX_LENGTH = 19
MAX_JOB_NAME = 63
_ALPHABET = string.digits + string.ascii_lowercase
_issued: set[str] = set()
_lock = threading.Lock()
T = TypeVar("T")


def unique_job_name(prefix: str, now: float | None = None) -> str:
    """``prefix`` + a 19-character time-and-random suffix, at most 63 characters in all."""
    stamp = time.strftime("%y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    base = prefix[: MAX_JOB_NAME - SUFFIX_LENGTH].rstrip("-")
    with _lock:
        while True:
            token = "".join(secrets.choice(_ALPHABET) for _ in range(4))
            name = f"{base}-{stamp}-{token}"
            if name not in _issued:
                _issued.add(name)
                return name


NAME_ATTEMPTS = 3


def name_taken(exc: BaseException) -> bool:
    """Whether SageMaker refused a CreateTrainingJob because the name is in use."""
    response = getattr(exc, "response", None) or {}
    code = response.get("Error", {}).get("Code", "")
    return code in ("ResourceInUse", "ResourceInUseException") or "already exists" in str(exc)


def send_under_fresh_names(
    prefix: str,
    bind: Callable[[str], T],
    send: Callable[[T], None],
    fresh_name: Callable[[str], str] = unique_job_name,
) -> T:
    """``bind`` a fresh name (``fresh_name(prefix)``) and ``send`` it, again under a new name
    while SageMaker says the name is taken (a name only this process issued can still be
    another's); returns what was sent."""
    for attempt in range(NAME_ATTEMPTS):
        bound = bind(fresh_name(prefix))
        try:
            send(bound)
        except Exception as exc:
            if name_taken(exc) and attempt + 1 < NAME_ATTEMPTS:
                continue
            raise
        return bound
    raise AssertionError("unreachable")  # pragma: no cover
