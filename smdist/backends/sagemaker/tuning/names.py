"""Tuning job names: at most 32 characters, so no room for the training jobs' random token.

SageMaker names each trial ``<tuning job>-<NNN>-<8 hex>``, which is why a tuning job's own name
is capped at 32 characters. smdist builds it as SDK v2's ``name_from_base(short=True)`` does,
a prefix, a hyphen and a timestamp, but to the second (``yymmdd-HHMMSS``: 14 characters with
the hyphen, ``checks.tuning.TUNING_NAME_SUFFIX``) so that two searches a minute apart differ.
Two in the same second would not: a name is never issued twice by one process (the next
second is taken instead), and a name SageMaker reports as taken is replaced by a fresh one
(``sending.send_under_its_name``), as for training jobs.
"""

from __future__ import annotations

import threading
import time

from smdist.catalog import api
from smdist.checks.tuning import TUNING_NAME_SUFFIX

MAX_TUNING_JOB_NAME = api.field("tuning_job_name").limit
_STAMP = "%y%m%d-%H%M%S"
_issued: set[str] = set()
_lock = threading.Lock()


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
