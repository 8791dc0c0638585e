"""A search's result reads the same from either backend: the best trial, a table, a plot."""

from __future__ import annotations

import math

import pytest

from smdist.backends.tuning_results import Trial, TuningResult, best_so_far


def result(objective_type: str) -> TuningResult:
    trials = [
        Trial(0, "t-0", {"lr": 0.1}, 0.9, "Completed", "/m/0"),
        Trial(1, "t-1", {"lr": 0.01}, 0.2, "Completed", "/m/1"),
        Trial(2, "t-2", {"lr": 0.001}, 0.05, "Pruned"),  # pruned: never best
        Trial(3, "t-3", {"lr": 0.5}, None, "Failed"),
        Trial(4, "t-4", {"lr": 0.02}, math.nan, "Completed"),  # no usable value
        Trial(5, "t-5", {"lr": 0.03}, 0.2, "Completed", "/m/5"),  # a tie: the earlier wins
    ]
    return TuningResult("search", "local", "train:loss", objective_type, trials)


def test_the_best_trial_follows_the_objective_type():
    assert result("Minimize").best.name == "t-1"
    assert result("Maximize").best.name == "t-0"


def test_no_completed_trial_means_no_best():
    assert (
        TuningResult("s", "local", "m", "Minimize", [Trial(0, "a", {}, None, "Failed")]).best
        is None
    )


def test_best_so_far_is_a_running_extreme():
    assert list(best_so_far([3, 1, 2, 0.5], "Minimize")) == [3, 1, 1, 0.5]
    assert list(best_so_far([3, 1, 4], "Maximize")) == [3, 3, 4]


def test_rows_dataframe_and_plot():
    found = result("Minimize")
    rows = found.rows()
    assert rows[1] == {"trial": 1, "name": "t-1", "lr": 0.01, "objective": 0.2,
                       "status": "Completed", "model": "/m/1"}  # fmt: skip
    pandas = pytest.importorskip("pandas")
    frame = found.dataframe()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["trial"]) == [0, 1, 2, 3, 4, 5]
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ax = found.plot()
    assert ax.get_ylabel() == "train:loss"
    offsets = ax.collections[0].get_offsets()
    assert len(offsets) == 4  # the trials with a finite objective
