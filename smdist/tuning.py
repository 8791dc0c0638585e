"""``smdist.tune``: the job's ``tuning:`` search, on this machine or as a SageMaker tuning job.

Made from the same plan as ``fit``: every trial is the job ``fit`` would run (locally) or
``submit`` would send (on SageMaker) with other values for the tuned hyperparameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smdist.backends import registry
from smdist.checks.disk import check_paths
from smdist.checks.tuning_section import require_tuning
from smdist.errors import OPTION, Problem, SpecError


def tune(
    spec: Any = None,
    *,
    backend: str = registry.DEFAULT_BACKEND,
    wait: bool = True,
    options: dict[str, Any] | None = None,
    progress: bool | Callable[[str], None] = True,
    **fields: Any,
) -> Any:
    """Run the search of a job with a ``tuning:`` section: ``tune("job.yaml")``,
    ``tune(JobSpec)``, ``tune({...})`` or ``tune(name=..., tuning=..., ...)``.

    ``backend="local"`` (default) runs every trial on emulated hosts here and returns a
    ``TuningResult`` (``.best``, ``.dataframe()``, ``.plot()``); ``options``: ``hosts``,
    ``processes_per_host``, ``parallel``, ``fresh``, ``root``, ``on_trial``.
    ``backend="sagemaker"`` sends a tuning job and returns its ``TuningJob`` handle (``wait``
    first, by default; ``.result()`` gives the same ``TuningResult``); ``options``: ``bucket``,
    ``role``, ``region``. Each backend's options model (``registry.get(name).TuneOptions`` or
    ``.Options``) says what it takes.

    ``progress``: while the search runs, a line for each trial that ends (trial k of n, its
    objective or why it failed, the best so far; SageMaker: the search's counts as they
    change), printed on stdout so that a notebook shows it; a callable gets the lines instead;
    ``False`` shows nothing.
    """
    chosen = registry.get(backend)
    if not chosen.tunes:
        valid = ", ".join(registry.names(tunes=True))
        problem = Problem("backend", "runs no hyperparameter search", backend, valid)
        raise SpecError([problem], OPTION)
    chosen_options = chosen.tune_options(options)
    plan = _tuning_plan(spec, fields)
    return chosen.tune(plan, chosen_options, _writer(progress), wait)


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
    require_tuning(job_spec)
    problems = check_paths(job_spec)  # planning reads no disk: paths are checked here
    if problems:
        raise SpecError(problems)
    return make_plan(job_spec)
