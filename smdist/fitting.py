"""``smdist.fit``: check a job, plan it once, hand the Plan to one backend, wait.

The one place a Plan is made for running: backends receive it and bind it, never plan again.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from smdist.backends import BACKENDS, DEFAULT_BACKEND, Job, check_options
from smdist.checks.disk import check_paths
from smdist.errors import OPTION, Problem, SpecError


def _spec_from(spec: Any, fields: dict[str, Any]):
    """The JobSpec ``fit`` runs: given whole, as a job file's path, or as keyword fields.

    Fields may be typed objects (``PyTorchDDP()``, ``Cluster(...)``), dicts, or a mix; they are
    validated as they are, never dumped and re-read (a dump that leaves defaults out would lose
    the ``kind`` that picks the strategy).
    """
    # lazy: `from smdist import fit` stays light: the job models load when fit runs
    from smdist.checks.reading import as_job_spec

    if spec is not None and fields:
        raise TypeError("pass either a JobSpec or its fields as keyword arguments, not both")
    return as_job_spec(fields if spec is None else spec)


def fit(
    spec: Any = None,
    *,
    backend: str = DEFAULT_BACKEND,
    wait: bool = True,
    logs: bool = True,
    options: dict[str, Any] | None = None,
    **fields: Any,
) -> Job:
    """Run a job: ``fit(JobSpec)``, ``fit("job.yaml")``, ``fit({...})`` or ``fit(name=...,
    strategy=PyTorchDDP(), cluster=Cluster(...), ...)``.

    ``backend``: ``local`` (default: emulated hosts on this machine), ``sagemaker``, or
    ``sagemaker-local`` (the SDK's Docker local mode). ``options`` go to the backend (for the
    local backend e.g. ``hosts`` and ``processes_per_host``). With ``wait`` (default) this
    returns when the job has ended; check ``job.status``.
    """
    if backend not in BACKENDS:
        raise SpecError(
            [Problem("backend", "unknown backend", backend, ", ".join(BACKENDS))], OPTION
        )
    # lazy: the planner (and the job models), when fit runs
    from smdist.planning.plan import plan as make_plan

    check_options(backend, options or {})
    job_spec = _spec_from(spec, fields)
    problems = check_paths(job_spec)  # planning reads no disk: paths are checked here
    if problems:
        raise SpecError(problems)
    module = importlib.import_module(BACKENDS[backend])
    plan = make_plan(job_spec)
    if backend != DEFAULT_BACKEND:  # the code is uploaded or copied into a container
        # lazy: packaging, for the backends that upload or copy the code
        from smdist.packaging.bundle import upload_notice

        for line in upload_notice(plan):
            print(line, file=sys.stderr)
    job = module.launch(plan, **(options or {}))
    if wait:
        job.wait(logs=logs)
    return job
