"""The one retry rule for torch 2.13's gloo abort at exit, for every test that runs real jobs.

torch 2.13 over gloo: a rank can abort in its exit handlers after the script has finished
("terminate called without an active exception", SIGABRT), even under bare torchrun; SageMaker
would fail such a job the same way. It is upstream and unrelated to what the tests prove, so a
job is run again (up to ATTEMPTS in all) only when it failed that way after the script had
finished on every rank; any other failure fails at once.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import TypeVar

EXIT_ABORT = re.compile(r"terminate called without an active exception|SIGABRT|signal 6\b")
ATTEMPTS = 3
Result = TypeVar("Result")


def past_torch_exit_aborts(
    attempt: Callable[[int], Result], aborted_after_finishing: Callable[[Result], bool]
) -> Result:
    """``attempt(number)`` (from 1), again only while ``aborted_after_finishing`` says its result
    failed by that abort after the script had finished (use EXIT_ABORT on its output)."""
    for number in range(1, ATTEMPTS + 1):
        result = attempt(number)
        if number == ATTEMPTS or not aborted_after_finishing(result):
            return result
        warnings.warn(
            f"attempt {number}: a rank aborted after the script had finished", stacklevel=2
        )
    raise AssertionError("unreachable")
