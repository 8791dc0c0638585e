"""``smdist.fit``: check a job, plan it once, hand the Plan to one backend, wait.

The one place a Plan is made for running: backends receive it and bind it, never plan again.
"""

from __future__ import annotations

import sys
from typing import Any

from smdist.backends import registry
from smdist.backends.base import Job
from smdist.checks.disk import check_paths
from smdist.errors import SpecError


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
    backend: str = registry.DEFAULT_BACKEND,
    wait: bool = True,
    logs: bool = True,
    options: dict[str, Any] | None = None,
    **fields: Any,
) -> Job:
    """Run a job: ``fit(JobSpec)``, ``fit("job.yaml")``, ``fit({...})`` or ``fit(name=...,
    strategy=PyTorchDDP(), cluster=Cluster(...), ...)``.

    ``backend``: a name from ``smdist.backends.BACKENDS`` (default ``local``: emulated hosts on
    this machine; ``sagemaker``; ``sagemaker-local``, the SDK's Docker local mode). ``options``
    go to the backend, checked against its options model (``smdist.backends.registry.get(name)
    .Options``; for the local backend e.g. ``hosts`` and ``processes_per_host``). With ``wait``
    (default) this returns when the job has ended; check ``job.status``.
    """
    # lazy: the planner (and the job models), when fit runs
    from smdist.planning.plan import plan as make_plan

    chosen = registry.get(backend)
    chosen_options = chosen.options(options)
    job_spec = _spec_from(spec, fields)
    # planning reads no disk: paths are checked here
    problems = check_paths(job_spec, file_inputs_here=chosen.file_inputs_here)
    if problems:
        raise SpecError(problems)
    plan = make_plan(job_spec)
    for line in chosen.announce(plan):  # what is uploaded or copied, before it is
        print(line, file=sys.stderr)
    job = chosen.launch(plan, chosen_options)
    if wait:
        job.wait(logs=logs)
    return job
