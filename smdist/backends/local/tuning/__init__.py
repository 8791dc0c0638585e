"""A hyperparameter search on the local backend: ``tune_locally(plan)``, with Optuna.

The job's ``tuning:`` section is searched as SageMaker's tuning job would search it, every trial
a real local job on the emulated hosts, its objective read from its log with the metric
definitions SageMaker uses (``Plan.metric_definitions``). What it finds is a ``TuningResult``,
the type a SageMaker tuning job's result has too. The study is a file under
``<root>/tuning/<name>/``, so an interrupted search resumes where it stopped; one search of a
study runs at a time in that folder (``lock``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.backends.local.options import DEFAULT_ROOT, LocalTuneOptions
from smdist.backends.local.preparation.setup import PrepareError
from smdist.backends.local.tuning.objective import objective_regex
from smdist.callbacks import each
from smdist.checks.tuning import tuning_name_prefix
from smdist.checks.tuning_section import require_tuning

if TYPE_CHECKING:
    from smdist.backends.local.tuning.search import OnTrial
    from smdist.backends.tuning_results import TuningResult
    from smdist.planning.plan import Plan
    from smdist.spec.tuning import Tuning


def local_notes(tuning: Tuning) -> list[str]:
    """What the job's search asks for that only SageMaker does: said, never dropped silently."""
    notes = []
    if tuning.warm_start is not None:
        parents = ", ".join(tuning.warm_start.parents)
        notes.append(
            f"tuning.warm_start ({parents}) names SageMaker tuning jobs: the local search "
            "starts without their trials (SageMaker's tuning job uses them)"
        )
    return notes


def _require_optuna() -> None:
    try:
        with warnings.catch_warnings():
            # Optuna imports tqdm.auto, which in a notebook without ipywidgets warns (naming
            # its own path) about a progress bar smdist never shows.
            warnings.filterwarnings("ignore", message="IProgress not found")
            import optuna  # noqa: F401
    except ImportError:
        raise PrepareError(
            "a local search runs with Optuna, which is not installed: pip install 'smdist[tune]'"
        ) from None


def trial_budget(tuning: Tuning) -> int:
    """How many trials the search runs in all (for its progress: trial k of n)."""
    _require_optuna()
    # lazy: it imports Optuna, which is optional (checked just above)
    from smdist.backends.local.tuning import space

    return space.trial_budget(tuning)


def tune_locally(
    plan: Plan,
    *,
    root: str | Path = DEFAULT_ROOT,
    hosts: int | None = None,
    processes_per_host: int | None = None,
    parallel: int | None = None,
    fresh: bool = False,
    on_trial: OnTrial | None = None,
) -> TuningResult:
    """Search ``plan.spec.tuning`` with local jobs; returns the trials and the best one.

    - ``root``: the local backend's root (trial jobs in ``<root>/jobs/``, the study in
      ``<root>/tuning/<name>/``); ``hosts``/``processes_per_host`` as for a local run;
    - ``parallel``: trials at a time (default: ``max_parallel_jobs``, capped so that this
      machine has a CPU for every process);
    - ``fresh``: start the search over (the earlier study is set aside, not deleted; the new
      study's trials are named ``<name>-s<n>-<number>``, so they never meet its jobs or
      checkpoints);
    - ``on_trial(result)``: called whenever a trial starts or ends.

    Ctrl-C or SIGTERM stops the running trials (no process is left) and returns with status
    ``Stopped``; running it again resumes: finished trials are kept, stopped ones run again.
    Raises ``StudyInUse`` (exit 2) while another process runs a search of the same study in
    ``root``.
    """
    _require_optuna()
    # lazy: these import Optuna, which is optional (checked just above)
    from smdist.backends.local.tuning import store
    from smdist.backends.local.tuning.lock import study_lock

    tuning = require_tuning(plan.spec)
    for note in local_notes(tuning):
        warnings.warn(note, UserWarning, stacklevel=2)
    name = tuning_name_prefix(plan.spec)
    directory = store.study_dir(Path(root), name)
    with study_lock(directory, name):  # before anything of the study is read or moved
        study = store.open_study(directory, name, tuning, fresh=fresh)
        trials = {"root": Path(root), "hosts": hosts, "processes_per_host": processes_per_host}
        return _search(plan, study, directory, trials, parallel, on_trial).run()


def _search(
    plan: Plan,
    study: Any,
    directory: Path,
    trials: dict[str, Any],
    parallel: int | None,
    on_trial: OnTrial | None,
) -> Any:
    """The search of ``study`` (opened and locked), its trials local jobs with ``trials``'
    options."""
    # lazy: these import Optuna, which is optional (checked by tune_locally)
    from smdist.backends.local.tuning import identity, space
    from smdist.backends.local.tuning.search import Search, default_parallel

    tuning = plan.spec.tuning
    name = tuning_name_prefix(plan.spec)
    if parallel is None:
        parallel = default_parallel(plan, tuning, trials["hosts"], trials["processes_per_host"])
    return Search(
        study=study,
        plan=plan,
        tuning=tuning,
        name=name,
        trial_prefix=identity.trial_prefix(name, identity.epoch(study)),
        directory=directory,
        regex=objective_regex(plan.metric_definitions, tuning.objective.metric),
        # A trial is a new job: it restores no checkpoints, whoever left them (its store,
        # named after it, is its study's own; see identity).
        launch_options={**trials, "fresh": True},
        parallel=max(1, parallel),
        budget=space.trial_budget(tuning),
        on_trial=on_trial,
    )


def tune_here(
    plan: Plan, options: LocalTuneOptions, progress: Callable[[str], None] | None
) -> TuningResult:
    """``tune_locally`` with the backend's options, and a line for each trial that ends."""
    # lazy: the progress lines, for a search only
    from smdist.backends.tuning_progress import TrialLines

    given = options.given()
    callbacks = [given.pop("on_trial", None)]  # a caller's own, called as well
    if progress is not None:
        callbacks.append(TrialLines(progress, trial_budget(plan.spec.tuning)))
    return tune_locally(plan, on_trial=each(*callbacks), **given)


__all__ = ["local_notes", "trial_budget", "tune_here", "tune_locally"]
