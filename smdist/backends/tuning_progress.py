"""One line per trial as a search's trials end: how far it is, what the trial gave, the best yet.

A search runs for minutes; without these lines a notebook cell or a CI log shows nothing until
it ends. The lines are the same wherever the search runs (``smdist.tune``, ``smdist tune
--local`` on a console that is no terminal), so a user reads one format.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from smdist.backends.tuning_results import FINISHED, Trial, TuningResult


def number(value: Any) -> str:
    """An objective as a person reads it: 6 significant digits, ``-`` when there is none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) or math.isnan(value) else str(value)
    return str(value)


def trial_line(result: TuningResult, trial: Trial, finished: int, total: int | None) -> str:
    """``trial 3/8 (name): Completed, loss=0.5; best so far: trial 1 (name), loss=0.4``."""
    metric = result.objective_metric
    head = f"trial {finished}/{total or '?'} ({trial.name}): {trial.status}"
    if trial.status == "Completed" or trial.objective is not None:
        head += f", {metric}={number(trial.objective)}"
    if trial.reason:
        head += f": {trial.reason}"
    best = result.best
    if best is None:
        return f"{head}; best so far: none"
    value = number(best.objective)
    return f"{head}; best so far: trial {best.number} ({best.name}), {metric}={value}"


class TrialLines:
    """An ``on_trial`` callback: ``write`` gets one line for each trial that newly ended.

    ``total`` is the search's budget of trials (``None`` when unknown: shown as ``?``).
    """

    def __init__(self, write: Callable[[str], None], total: int | None = None) -> None:
        self.write = write
        self.total = total
        self.seen: set[int] = set()

    def __call__(self, result: TuningResult) -> None:
        ended = [t for t in result.trials if t.status in FINISHED and t.number not in self.seen]
        for trial in sorted(ended, key=lambda t: t.number):
            self.seen.add(trial.number)
            self.write(trial_line(result, trial, len(self.seen), self.total))
