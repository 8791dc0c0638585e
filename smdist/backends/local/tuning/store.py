"""Where a local search lives, ``<root>/tuning/<name>/``, and what it keeps there.

- ``study.journal``: Optuna's journal (a file, no database server): every trial, its values,
  reports and end. Re-running the same search appends to it, so it resumes.
- ``trials.json``: the search as a ``TuningResult`` (what ``smdist`` shows and a notebook
  reads), rewritten whenever a trial starts or ends.

The journal also keeps which study it is and what it searches (``identity``): a resumed study
must search what it began with.

A trial's own record is kept in its Optuna user attributes: its job name, the hyperparameter
values it ran with, its last objective value, its model, and, for a trial that did not end by
itself (Ctrl-C, SIGTERM, this machine's setup), that it was interrupted: such a trial does not
count towards ``max_jobs`` and its values are queued to run again when the search resumes.
A trial that failed keeps why (``reason``): its job's failure reason, or, for a job that
completed, why it gave no objective.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from smdist.backends.local.tuning import identity
from smdist.backends.local.tuning.space import make_pruner, make_sampler
from smdist.backends.local_studies import JOURNAL, SNAPSHOT  # what status and jobs read
from smdist.backends.safe_files import write_text_atomically
from smdist.backends.tuning_results import Trial, TuningResult
from smdist.spec.tuning import Tuning

# user attributes of a trial
JOB_NAME, VALUES, OBJECTIVE, MODEL = "job_name", "values", "objective", "model"
STATUS, INTERRUPTED, REASON = "status", "interrupted", "reason"
_STATES = {TrialState.COMPLETE: "Completed", TrialState.PRUNED: "Pruned"}


def study_dir(root: Path, name: str) -> Path:
    return root / "tuning" / name


def open_study(
    directory: Path,
    name: str,
    tuning: Tuning,
    *,
    fresh: bool,
) -> optuna.Study:
    """The search's study, new or resumed; ``fresh`` sets the earlier one aside first (as
    ``study.journal.before-<n>``: a search is never deleted by a flag). A resumed study is
    refused (SpecError) when ``tuning`` searches another space than it began with."""
    directory.mkdir(parents=True, exist_ok=True)
    journal = directory / JOURNAL
    if fresh and journal.exists():
        _set_aside(journal)
        (directory / SNAPSHOT).unlink(missing_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalFileBackend(str(journal)))
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        sampler=optuna.samplers.RandomSampler(),  # replaced below, once the trials are known
        pruner=make_pruner(tuning),
        direction="minimize" if tuning.objective.type == "Minimize" else "maximize",
        load_if_exists=True,
    )
    identity.settle(study, tuning, directory, epoch=_set_aside_count(journal))
    requeue_unfinished(study)
    study.sampler = make_sampler(tuning, resumed_trials=len(study.get_trials(deepcopy=False)))
    return study


def _set_aside_count(journal: Path) -> int:
    """How many earlier studies were set aside (``<journal>.before-1``, ``-2``, ...)."""
    count = 0
    while journal.with_name(f"{journal.name}.before-{count + 1}").exists():
        count += 1
    return count


def _set_aside(journal: Path) -> None:
    after = _set_aside_count(journal) + 1
    shutil.move(str(journal), journal.with_name(f"{journal.name}.before-{after}"))


def requeue_unfinished(study: optuna.Study) -> None:
    """Trials a killed search left running: ended as interrupted, their values queued again."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        end_interrupted(study, trial.number, trial.params)


def end_interrupted(study: optuna.Study, number: int, params: dict[str, Any]) -> None:
    """End trial ``number`` as stopped before its end; its values run again on resumption."""
    trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)
    study._storage.set_trial_user_attr(trial_id, STATUS, "Stopped")
    study._storage.set_trial_user_attr(trial_id, INTERRUPTED, True)
    study.tell(number, state=TrialState.FAIL, skip_if_finished=True)
    if params:
        study.enqueue_trial(params, skip_if_exists=False)


def counted(study: optuna.Study) -> int:
    """Trials that count towards ``max_jobs``: every one that ended by itself."""
    finished = study.get_trials(
        deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    )
    return sum(1 for trial in finished if not trial.user_attrs.get(INTERRUPTED))


def as_trial(frozen: FrozenTrial, running: set[int]) -> Trial | None:
    """A study trial as the shared result type; None for one only queued."""
    attrs = frozen.user_attrs
    if frozen.state == TrialState.WAITING or JOB_NAME not in attrs:
        return None
    if frozen.state == TrialState.RUNNING:
        status = "Running" if frozen.number in running else "Stopped"
    else:
        status = _STATES.get(frozen.state) or attrs.get(STATUS, "Failed")
    objective = frozen.value if frozen.state == TrialState.COMPLETE else attrs.get(OBJECTIVE)
    return Trial(
        number=frozen.number,
        name=attrs[JOB_NAME],
        values=dict(attrs.get(VALUES, {})),
        objective=objective,
        status=status,
        model=attrs.get(MODEL),
        reason=attrs.get(REASON),
    )


def result_of(
    study: optuna.Study, name: str, tuning: Tuning, running: set[int], status: str
) -> TuningResult:
    trials = [as_trial(frozen, running) for frozen in study.get_trials(deepcopy=False)]
    return TuningResult(
        name=name,
        backend="local",
        objective_metric=tuning.objective.metric,
        objective_type=tuning.objective.type,
        trials=[trial for trial in trials if trial is not None],
        status=status,
    )


def write_snapshot(directory: Path, result: TuningResult) -> Path:
    """``trials.json``, replaced whole (a reader never sees half of it)."""
    document = {
        "name": result.name,
        "backend": result.backend,
        "objective_metric": result.objective_metric,
        "objective_type": result.objective_type,
        "status": result.status,
        "best": result.best.number if result.best else None,
        "trials": result.rows(),
    }
    path = directory / SNAPSHOT
    write_text_atomically(path, json.dumps(document, indent=1, default=str) + "\n")
    return path


def read_snapshot(directory: Path) -> dict[str, Any]:
    return json.loads((directory / SNAPSHOT).read_text())
