"""Tuning job names: at most 32 characters, so no room for the training jobs' random token.

SageMaker names each trial ``<tuning job>-<NNN>-<8 hex>``, which is why a tuning job's own name
is capped at 32 characters. smdist builds it as SDK v2's ``name_from_base(short=True)`` does,
a prefix, a hyphen and a timestamp, but to the second (``yymmdd-HHMMSS``: 14 characters with
the hyphen, ``checks.tuning.TUNING_NAME_SUFFIX``) so that two searches a minute apart differ.
Two in the same second would not: a name is never issued twice by one process (the next
second is taken instead), and a name SageMaker reports as taken is replaced by a fresh one, as
``job_names.send_under_fresh_names`` does for training jobs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from smdist.backends.job_names import send_under_fresh_names
from smdist.catalog import api
from smdist.checks.tuning import TUNING_NAME_SUFFIX

MAX_TUNING_JOB_NAME = api.field("tuning_job_name").limit
_STAMP = "%y%m%d-%H%M%S"
_issued: set[str] = set()
_lock = threading.Lock()
T = TypeVar("T")


def tuning_job_name(prefix: str, now: float | None = None) -> str:
    """``prefix-yymmdd-HHMMSS``, at most 32 characters, never the same twice in this process."""
    base = prefix[: MAX_TUNING_JOB_NAME - TUNING_NAME_SUFFIX].rstrip("-")
    moment = int(time.time() if now is None else now)
    with _lock:
        while True:
            name = f"{base}-{time.strftime(_STAMP, time.gmtime(moment))}"
            if name not in _issued:
                _issued.add(name)
                return name
            moment += 1  # the same second again: the next one is as readable and still free


def send_under_fresh_tuning_names(
    prefix: str, bind: Callable[[str], T], send: Callable[[T], None]
) -> T:
    """``bind`` a fresh tuning job name and ``send`` it; while SageMaker says the name is in
    use (another process, or a job of this name earlier), again under a new name."""
    return send_under_fresh_names(prefix, bind, send, fresh_name=tuning_job_name)
