"""What a hyperparameter search found, whichever backend ran it: its trials and the best one.

A local study and a SageMaker tuning job both end here, so a notebook reads either the same way:
``result.best``, ``result.dataframe()`` (pandas, when installed) and ``result.plot()``
(matplotlib: each trial's objective, and the best so far).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

ObjectiveType = Literal["Minimize", "Maximize"]
FINISHED = ("Completed", "Failed", "Stopped", "Pruned")


@dataclass(frozen=True)
class Trial:
    """One training job of the search."""

    number: int  # 0-based, in the order the trials started
    name: str  # the training job's name (SageMaker) or the local job's
    values: dict[str, Any]  # the tuned hyperparameters' values
    objective: float | None  # the objective metric's final value; None: never reported
    status: str  # Pending, Running, Completed, Failed, Stopped, Pruned
    model: str | None = None  # where its model went (s3:// or a local path)
    reason: str | None = None  # why it failed (its job's failure, or why it gave no objective)

    def as_row(self) -> dict[str, Any]:
        """The trial as one row; ``reason`` only where there is one."""
        row = {
            "trial": self.number,
            "name": self.name,
            **self.values,
            "objective": self.objective,
            "status": self.status,
            "model": self.model,
        }
        if self.reason:
            row["reason"] = self.reason
        return row


@dataclass
class TuningResult:
    """A search's trials as last seen, and which is best for its objective."""

    name: str
    backend: str  # "local" or "sagemaker"
    objective_metric: str
    objective_type: ObjectiveType
    trials: list[Trial] = field(default_factory=list)
    status: str = "Completed"

    @property
    def best(self) -> Trial | None:
        """The completed trial with the best objective (the earliest among equals)."""
        scored = [t for t in self.trials if t.status == "Completed" and _finite(t.objective)]
        if not scored:
            return None
        sign = 1.0 if self.objective_type == "Minimize" else -1.0
        return min(scored, key=lambda t: (sign * float(t.objective or 0.0), t.number))

    def rows(self) -> list[dict[str, Any]]:
        return [trial.as_row() for trial in sorted(self.trials, key=lambda t: t.number)]

    def dataframe(self) -> Any:
        """The trials as a pandas DataFrame, one row per trial."""
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "dataframe() needs pandas: pip install pandas (rows() gives the same as dicts)"
            ) from None
        return pandas.DataFrame(self.rows())

    def plot(self, ax: Any = None) -> Any:
        """Each trial's objective against its number, and the best so far; returns the Axes."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("plot() needs matplotlib: pip install matplotlib") from None
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        scored = [t for t in sorted(self.trials, key=lambda t: t.number) if _finite(t.objective)]
        numbers = [t.number for t in scored]
        values = [float(t.objective or 0.0) for t in scored]
        ax.scatter(numbers, values, label="trial", zorder=3)
        ax.step(numbers, list(best_so_far(values, self.objective_type)), where="post",
                label="best so far")  # fmt: skip
        ax.set_xlabel("trial")
        ax.set_ylabel(self.objective_metric)
        ax.set_title(f"{self.name} ({self.objective_type.lower()})")
        ax.legend()
        return ax


def best_so_far(values: Iterable[float], objective_type: ObjectiveType) -> Iterable[float]:
    best: float | None = None
    for value in values:
        if best is None:
            best = value
        else:
            best = min(best, value) if objective_type == "Minimize" else max(best, value)
        yield best


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
