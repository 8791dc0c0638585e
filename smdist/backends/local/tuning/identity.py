"""Which study a local search is, kept in the study's own journal as Optuna user attributes.

- ``epoch``: which of its folder's studies it is: 0 for the first, ``n`` for the one begun by
  the ``n``-th ``--fresh`` (the study before it set aside as ``study.journal.before-<n>``). The
  trials of a later study are named ``<search>-s<n>-<number>``, so their jobs and checkpoint
  stores (``<root>/checkpoints/<trial name>``) are never an earlier study's.
- ``search_space`` and ``objective``: what the study began searching. A study resumes only with
  the same ones: with other ranges its best trial would be shown as this search's best, and
  Optuna cannot take other values of a categorical in the same study. Each difference is named,
  with the way on (``--fresh``, or another ``tuning.name``), as an invalid job (exit 2).

A study begun before these were kept is taken as it is: epoch 0, its space recorded now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from smdist.errors import Problem, SpecError
from smdist.spec.tuning import Tuning

EPOCH, SEARCH_SPACE, OBJECTIVE = "epoch", "search_space", "objective"


def search_space(tuning: Tuning) -> dict[str, dict[str, Any]]:
    """Every tuned hyperparameter's range, as JSON (as the journal keeps it)."""
    return {name: range_.model_dump(mode="json") for name, range_ in tuning.parameters.items()}


def objective(tuning: Tuning) -> dict[str, Any]:
    return tuning.objective.model_dump(mode="json")


def trial_prefix(name: str, epoch: int) -> str:
    """What the study's trial names start with: ``<name>``, then ``<name>-s<epoch>``."""
    return name if epoch == 0 else f"{name}-s{epoch}"


def settle(study: optuna.Study, tuning: Tuning, directory: Path, *, epoch: int) -> None:
    """A new study (the ``epoch``-th of its folder) records what it searches; a resumed one is
    checked against what it recorded first (SpecError naming every change; nothing of the
    study is changed then)."""
    kept = study.user_attrs
    if SEARCH_SPACE in kept:
        problems = changes(study.study_name, kept[SEARCH_SPACE], kept[OBJECTIVE], tuning)
        if problems:
            raise SpecError(problems, _header(study.study_name, directory))
        return
    begun = epoch if not study.get_trials(deepcopy=False) else 0  # else: kept before epochs
    for key, value in ((EPOCH, begun), (SEARCH_SPACE, search_space(tuning)),
                       (OBJECTIVE, objective(tuning))):  # fmt: skip
        study.set_user_attr(key, value)


def epoch(study: optuna.Study) -> int:
    """Which of its folder's studies ``study`` is (0: the first; see ``settle``)."""
    return int(study.user_attrs.get(EPOCH, 0))


def changes(
    name: str, space: dict[str, Any], began: dict[str, Any], tuning: Tuning
) -> list[Problem]:
    """Each way ``tuning`` differs from the search space and objective study ``name`` began
    with, as a problem of the job's field."""
    problems = []
    now = search_space(tuning)
    for parameter in [*space, *(p for p in now if p not in space)]:
        old, new = space.get(parameter), now.get(parameter)
        if old != new:
            problems.append(
                Problem(
                    f"tuning.parameters.{parameter}",
                    f"{_range(old)} when study {name} began, now {_range(new)}",
                )
            )
    if began != objective(tuning):
        problems.append(
            Problem(
                "tuning.objective",
                f"{_objective(began)} when study {name} began, now {_objective(objective(tuning))}",
            )
        )
    return problems


def _range(range_: dict[str, Any] | None) -> str:
    if range_ is None:
        return "not searched"
    if range_["type"] == "categorical":
        return f"values {range_['values']!r}"
    scaling = "" if range_["scaling"] == "Auto" else f" ({range_['scaling']})"
    return f"{range_['type']} {range_['min']!r}..{range_['max']!r}{scaling}"


def _objective(objective: dict[str, Any]) -> str:
    return f"{objective['type']} {objective['metric']}"


def _header(name: str, directory: Path) -> str:
    return (
        f"study {name} in this folder ({directory}) began with another search than the job's: "
        "start a new study with --fresh (this one is set aside, its finished trials kept) or "
        "give the search another tuning.name; or, to resume the study, search what it began with"
    )
