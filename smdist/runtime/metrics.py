"""One metric line format for every entry point, and the regexes SageMaker needs to read it.

A line looks like ``[metrics] step=40 epoch=1 loss=0.412300 samples_per_sec=2311.4``. SageMaker
metric definitions are regexes over the log; keeping the format in one module keeps the
entry points and the backends' ``metric_definitions`` in step.
"""

from __future__ import annotations

import math
import re
import sys
from typing import TextIO

PREFIX = "[metrics]"
# A value as Python prints floats and ints, plus nan/inf.
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"

# Metrics the ready entry points print; backends turn these into SageMaker metric definitions.
STANDARD_METRICS = ("loss", "accuracy", "samples_per_sec", "epoch", "step")


def format_metrics(**values: float | int) -> str:
    """Render one metric line; ints stay ints, floats get six significant decimals."""
    parts = []
    for name, value in values.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"metric name {name!r} must be an identifier")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"metric {name!r} must be a number, got {value!r}")
        if isinstance(value, int):
            parts.append(f"{name}={value}")
        elif math.isfinite(value):
            parts.append(f"{name}={value:.6g}" if abs(value) >= 1e5 else f"{name}={value:.6f}")
        else:
            parts.append(f"{name}={value}")
    return " ".join([PREFIX, *parts])


def log_metrics(stream: TextIO | None = None, **values: float | int) -> None:
    """Write one metric line and flush, so log tailers see it at once.

    One ``write`` call for text and newline: with PYTHONUNBUFFERED (SageMaker sets it) ``print``
    writes them separately, and ``mpirun --tag-output`` then splits the line in two.
    """
    stream = stream or sys.stdout
    stream.write(format_metrics(**values) + "\n")
    stream.flush()


def metric_regex(name: str) -> str:
    """The regex whose first group captures ``name`` on a metric line."""
    return rf"\[metrics\].*?(?:^|\s){re.escape(name)}=({_NUMBER})"


def metric_definitions(names: tuple[str, ...] = STANDARD_METRICS) -> list[dict[str, str]]:
    """SageMaker ``metric_definitions`` matching the lines above."""
    return [{"Name": f"train:{name}", "Regex": metric_regex(name)} for name in names]
