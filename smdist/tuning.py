"""``smdist.tune``: the job's ``tuning:`` search, on this machine or as a SageMaker tuning job.

Made from the same plan as ``fit``: every trial is the job ``fit`` would run (locally) or
``submit`` would send (on SageMaker) with other values for the tuned hyperparameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smdist.callbacks import each
from smdist.checks.disk import check_paths
from smdist.errors import OPTION, Problem, SpecError

BACKENDS = ("local", "sagemaker")


def tune(
    spec: Any = None,
    *,
    backend: str = "local",
    wait: bool = True,
    options: dict[str, Any] | None = None,
    progress: bool | Callable[[str], None] = True,
    **fields: Any,
) -> Any:
    """Run the search of a job with a ``tuning:`` section: ``tune("job.yaml")``,
    ``tune(JobSpec)``, ``tune({...})`` or ``tune(name=..., tuning=..., ...)``.

    ``backend="local"`` (default) runs every trial on emulated hosts here and returns a
    ``TuningResult`` (``.best``, ``.dataframe()``, ``.plot()``); ``options``: ``hosts``,
    ``processes_per_host``, ``parallel``, ``fresh``, ``root``. ``backend="sagemaker"`` sends a
    tuning job and returns its ``TuningJob`` handle (``wait`` first, by default; ``.result()``
    gives the same ``TuningResult``); ``options``: ``bucket``, ``role``, ``region``.

    ``progress``: while the search runs, a line for each trial that ends (trial k of n, its
    objective or why it failed, the best so far; SageMaker: the search's counts as they
    change), printed on stdout so that a notebook shows it; a callable gets the lines instead;
    ``False`` shows nothing.
    """
    if backend not in BACKENDS:
        raise SpecError(
            [Problem("backend", "unknown tuning backend", backend, ", ".join(BACKENDS))], OPTION
        )
    plan = _tuning_plan(spec, fields)
    if backend == "local":
        # lazy: the local backend and Optuna, for a local search only
        from smdist.backends.local.tuning import trial_budget, tune_locally
        from smdist.backends.tuning_progress import TrialLines

        local = dict(options or {})
        callbacks = [local.pop("on_trial", None)]  # a caller's own, called as well
        write = _writer(progress)
        if write is not None:
            callbacks.append(TrialLines(write, trial_budget(plan.spec.tuning)))
        return tune_locally(plan, on_trial=each(*callbacks), **local)
    # lazy: the SageMaker backend, for a SageMaker tuning job only
    from smdist.backends.sagemaker.tuning import launch

    job = launch(plan, **(options or {}))
    if wait:
        write = _writer(progress)
        job.wait(echo=write or (lambda line: None))
    return job


def _writer(progress: bool | Callable[[str], None]) -> Callable[[str], None] | None:
    """Where progress lines go: stdout (a notebook shows it under the cell), a callable, none."""
    if callable(progress):
        return progress
    if progress:
        return lambda line: print(line, flush=True)
    return None


def _tuning_plan(spec: Any, fields: dict[str, Any]) -> Any:
    # lazy: `from smdist import tune` stays light: the job models load when tune runs
    from smdist.checks.reading import as_job_spec
    from smdist.planning.plan import plan as make_plan

    if spec is not None and fields:
        raise TypeError("pass either a JobSpec or its fields as keyword arguments, not both")
    job_spec = as_job_spec(fields if spec is None else spec)
    if job_spec.tuning is None:
        raise SpecError(
            [
                Problem(
                    "tuning",
                    "is missing: the job states no search",
                    None,
                    "a tuning: section with objective, parameters and max_jobs",
                )
            ]
        )
    problems = check_paths(job_spec)  # planning reads no disk: paths are checked here
    if problems:
        raise SpecError(problems)
    return make_plan(job_spec)
