"""A trial's objective, read from its log lines as SageMaker reads it from CloudWatch.

SageMaker applies each metric definition's regex to every log line and takes the first group as
the value; a tuning job's objective is the metric's LAST value. A local trial is read the same
way, with the same definitions (``Plan.metric_definitions``), so a regex that works here works
there. Every value is also an intermediate report for Optuna's pruners; its step is the line's
``epoch=`` (the unit Hyperband's resources are given in), else its ``step=``, else the count of
values so far.

When the job gives no value, the reader says why (``no_value_reason``): the regex matched no line
(the last lines the script printed are quoted, for a pattern that almost fits), or it matched but
its first group was no number.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from smdist.backends.log_lines import split_prefixed

SMDIST_LABEL = "smdist"  # the local backend's own notes, never the script's output
LAST_LINES = 3  # the script's last lines quoted when the regex matched none
_STEP_KEYS = (re.compile(r"(?:^|\s)epoch=(\d+)\b"), re.compile(r"(?:^|\s)step=(\d+)\b"))


class MissingMetric(LookupError):
    """The objective names no metric definition of the job."""


def objective_regex(definitions: Iterable[dict[str, str]], metric: str) -> re.Pattern[str]:
    """The compiled regex of ``metric`` among the job's API metric definitions."""
    for definition in definitions:
        if definition["Name"] == metric:
            return re.compile(definition["Regex"])
    raise MissingMetric(f"no metric definition is named {metric!r}")


def value_of(regex: re.Pattern[str], text: str) -> float | None:
    """The metric's value on one line; None when the line does not carry it (or carries
    something that is no number: SageMaker skips such a line too)."""
    return _number(regex.search(text))


def _number(match: re.Match[str] | None) -> float | None:
    if match is None or match.group(1) is None:
        return None
    try:
        return float(match.group(1))
    except ValueError:
        return None


def step_of(text: str) -> int | None:
    """The line's own epoch (or step) number, when it prints one."""
    for pattern in _STEP_KEYS:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


@dataclass(frozen=True)
class Report:
    """One value of the objective, at the step a pruner compares it at."""

    step: int
    value: float


@dataclass
class ObjectiveReader:
    """Follows one trial's lines: every value in order, the last one being the objective."""

    regex: re.Pattern[str]
    values: list[float] = field(default_factory=list)
    printed: deque[str] = field(default_factory=lambda: deque(maxlen=LAST_LINES))
    unreadable: str | None = None  # a line the regex matched without a number in its group
    _steps: set[int] = field(default_factory=set)

    @property
    def last(self) -> float | None:
        """The trial's objective so far (SageMaker's final value): None before any report."""
        return self.values[-1] if self.values else None

    def feed_text(self, text: str) -> Report | None:
        """A line as the script printed it; the report for a pruner, if it is a new step.

        A second value at a step already reported still counts for the objective, but is no
        report: Optuna keeps the first value of a step and ignores later ones.
        """
        self.printed.append(text)
        match = self.regex.search(text)
        value = _number(match)
        if value is None:
            if match is not None:
                self.unreadable = text
            return None
        self.values.append(value)
        step = step_of(text)
        step = len(self.values) - 1 if step is None else step
        if step in self._steps:
            return None
        self._steps.add(step)
        return Report(step, value)

    def feed_log_line(self, line: str) -> Report | None:
        """A line of the local job's combined log (``<host[ rN]> | <text>``); smdist's own
        notes are skipped (a failure summary may quote a metric line)."""
        parts = split_prefixed(line)
        if parts is None:
            return self.feed_text(line)
        label, text = parts
        if label == SMDIST_LABEL:
            return None
        return self.feed_text(text)


def no_value_reason(metric: str, reader: ObjectiveReader) -> str:
    """Why a job that completed gave the objective no value, as its trial's reason."""
    pattern = f"the regex of the objective metric {metric} ({reader.regex.pattern!r})"
    if reader.unreadable is not None:
        return (
            f"the job completed, but {pattern} matched only lines whose first group is no "
            f"number, such as {reader.unreadable!r}"
        )
    if reader.values:
        return f"the job completed, but the last value of {metric} is {reader.values[-1]}"
    said = " | ".join(repr(line) for line in reader.printed) or "none"
    return (
        f"the job completed, but no line of its log matched {pattern}; the job's last lines: {said}"
    )


def final_value(regex: re.Pattern[str], lines: Iterable[str]) -> float | None:
    """The objective of a finished log: the last value of the metric, None if never reported."""
    reader = ObjectiveReader(regex)
    for line in lines:
        reader.feed_log_line(line)
    return reader.last


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
