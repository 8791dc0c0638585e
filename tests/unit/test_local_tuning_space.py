"""The local search's sampling: each scaling type's values, Grid's budget, the strategy's
sampler and pruner, as Optuna's ask-and-tell runs them (in memory, no job)."""

from __future__ import annotations

import optuna
import pytest

from smdist.backends.local.tuning.space import (
    REVERSE_PREFIX,
    make_pruner,
    make_sampler,
    suggest,
    trial_budget,
)
from smdist.spec.tuning import Tuning

optuna.logging.set_verbosity(optuna.logging.WARNING)


def tuning(**fields) -> Tuning:
    return Tuning.model_validate({"objective": {"metric": "train:loss"}, **fields})


def test_each_scaling_samples_within_its_bounds_with_the_type_written():
    search = tuning(
        parameters={
            "lr": {"type": "continuous", "min": 1e-5, "max": 1e-1, "scaling": "Logarithmic"},
            "momentum": {"type": "continuous", "min": 0.9, "max": 0.999,
                         "scaling": "ReverseLogarithmic"},
            "layers": {"type": "integer", "min": 1, "max": 8},
            "optimizer": {"type": "categorical", "values": ["adam", 3, 0.5, True]},
        },
        max_jobs=30, random_seed=0,
    )  # fmt: skip
    study = optuna.create_study(
        sampler=make_sampler(search.model_copy(update={"strategy": "Random"}))
    )
    for _ in range(30):
        trial = study.ask()
        values = suggest(trial, search)
        assert 1e-5 <= values["lr"] <= 1e-1
        assert 0.9 <= values["momentum"] <= 0.999
        assert isinstance(values["layers"], int) and 1 <= values["layers"] <= 8
        assert values["optimizer"] in ("adam", 3, 0.5, True)
        assert REVERSE_PREFIX + "momentum" in trial.params  # 1 - x, sampled log-uniformly
        study.tell(trial, 0.0)


def test_grid_runs_every_combination_unless_max_jobs_caps_it():
    parameters = {
        "a": {"type": "categorical", "values": [1, 2, 3]},
        "b": {"type": "categorical", "values": ["x", "y"]},
    }
    assert trial_budget(tuning(parameters=parameters, strategy="Grid")) == 6
    assert trial_budget(tuning(parameters=parameters, strategy="Grid", max_jobs=4)) == 4
    search = tuning(parameters=parameters, strategy="Grid")
    study = optuna.create_study(sampler=make_sampler(search))
    seen = []
    for _ in range(6):
        trial = study.ask()
        seen.append(tuple(suggest(trial, search).values()))
        study.tell(trial, 1.0)  # the grid's end does not stop a study run by ask-and-tell
    assert sorted(seen) == sorted((a, b) for a in (1, 2, 3) for b in ("x", "y"))


@pytest.mark.parametrize(
    ("fields", "sampler", "pruner"),
    [
        ({"strategy": "Bayesian"}, optuna.samplers.TPESampler, optuna.pruners.NopPruner),
        ({"strategy": "Random"}, optuna.samplers.RandomSampler, optuna.pruners.NopPruner),
        ({"strategy": "Bayesian", "early_stopping": True}, optuna.samplers.TPESampler,
         optuna.pruners.MedianPruner),
        ({"strategy": "Hyperband", "hyperband": {"min_resource": 1, "max_resource": 9}},
         optuna.samplers.TPESampler, optuna.pruners.HyperbandPruner),
    ],
)  # fmt: skip
def test_each_strategy_has_its_sampler_and_pruner(fields, sampler, pruner):
    search = tuning(parameters={"x": {"type": "integer", "min": 1, "max": 3}}, max_jobs=9, **fields)
    assert isinstance(make_sampler(search), sampler)
    assert isinstance(make_pruner(search), pruner)
