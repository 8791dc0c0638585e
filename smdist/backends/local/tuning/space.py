"""The search as Optuna runs it: the sampler and pruner for each tuning strategy, and the values
a trial tries, sampled the way SageMaker's scaling types sample them.

- Bayesian: TPE (seeded by ``random_seed``); its random start is a third of the budget (at
  most Optuna's 10), so that a small budget still has trials guided by the earlier ones.
- Random: uniform sampling; Grid: every combination of the categorical values once (in an
  order the seed fixes), ``max_jobs`` capping how many; Hyperband: TPE with Optuna's
  Hyperband pruner over ``hyperband.min_resource``..``max_resource`` (epochs).
- ``early_stopping: true`` (the API's ``Auto``): the median rule SageMaker documents, a trial
  stopped when its objective at a step is worse than the median of earlier trials' at that step.

Scaling: Logarithmic samples log-uniformly, Linear and Auto uniformly. ReverseLogarithmic
(for values close to 1, such as a momentum of 0.9..0.999) samples ``1 - x`` log-uniformly; the
study keeps that internal value as ``1-<name>`` (``REVERSE_PREFIX``), the trial's hyperparameter
is ``x``.
"""

from __future__ import annotations

import math
from typing import Any

import optuna

from smdist.spec.tuning import CategoricalRange, ContinuousRange, IntegerRange, Tuning

REVERSE_PREFIX = "1-"  # the study's name for ReverseLogarithmic's internal value
TPE_STARTUP_MAX = 10  # Optuna's default random start
MEDIAN_STARTUP_TRIALS = 3  # finished trials before the median rule may stop one


class _GridSampler(optuna.samplers.GridSampler):
    """Optuna's grid, without its call to ``study.stop()`` once every point has started: that
    call is for ``optimize()``; the search here counts its trials itself."""

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        return None


def grid_space(tuning: Tuning) -> dict[str, list[Any]]:
    """Every categorical range's values, as written."""
    return {
        name: list(parameter.values)
        for name, parameter in tuning.parameters.items()
        if isinstance(parameter, CategoricalRange)
    }


def trial_budget(tuning: Tuning) -> int:
    """Trials in all: ``max_jobs``; for Grid every combination, ``max_jobs`` capping it."""
    if tuning.strategy == "Grid":
        combinations = math.prod(len(values) for values in grid_space(tuning).values())
        return min(combinations, tuning.max_jobs or combinations)
    return tuning.max_jobs or 1


def make_sampler(tuning: Tuning, resumed_trials: int = 0) -> optuna.samplers.BaseSampler:
    """The strategy's sampler; a resumed search's seed is moved on by the trials it has, so
    that it does not draw its first trials' values again. Not the grid's: its seed fixes the
    order of the combinations, which the trials already run refer to."""
    if tuning.strategy == "Grid":
        return _GridSampler(grid_space(tuning), seed=tuning.random_seed or 0)
    seed = None if tuning.random_seed is None else tuning.random_seed + resumed_trials
    if tuning.strategy == "Random":
        return optuna.samplers.RandomSampler(seed=seed)
    startup = max(1, min(TPE_STARTUP_MAX, trial_budget(tuning) // 3))
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)


def make_pruner(tuning: Tuning) -> optuna.pruners.BasePruner:
    if tuning.strategy == "Hyperband":
        band = tuning.hyperband
        if band is None:
            return optuna.pruners.HyperbandPruner()
        return optuna.pruners.HyperbandPruner(
            min_resource=band.min_resource, max_resource=band.max_resource
        )
    if tuning.early_stopping:
        return optuna.pruners.MedianPruner(n_startup_trials=MEDIAN_STARTUP_TRIALS)
    return optuna.pruners.NopPruner()


def suggest(trial: optuna.Trial, tuning: Tuning) -> dict[str, Any]:
    """The trial's value of every tuned hyperparameter, as the training script receives it."""
    return {
        name: _suggest_one(trial, name, parameter) for name, parameter in tuning.parameters.items()
    }


def _suggest_one(trial: optuna.Trial, name: str, parameter: Any) -> Any:
    if isinstance(parameter, CategoricalRange):
        return trial.suggest_categorical(name, list(parameter.values))
    log = parameter.scaling == "Logarithmic"
    if isinstance(parameter, IntegerRange):
        return trial.suggest_int(name, parameter.min, parameter.max, log=log)
    assert isinstance(parameter, ContinuousRange)
    if parameter.scaling == "ReverseLogarithmic":
        low, high = 1.0 - parameter.max, 1.0 - parameter.min
        return 1.0 - trial.suggest_float(REVERSE_PREFIX + name, low, high, log=True)
    return trial.suggest_float(name, parameter.min, parameter.max, log=log)
