"""Where a job runs. ``fit`` plans a job and hands the Plan to one backend.

Backends load lazily: the SageMaker SDK is imported only by the ``sagemaker`` and
``sagemaker-local`` backends, the local emulator only when it runs.
"""

from __future__ import annotations

import importlib
from typing import Any

from smdist.backends.base import Job, JobError, JobStatus
from smdist.errors import Problem, SpecError

BACKENDS = {
    "local": "smdist.backends.local",
    "sagemaker": "smdist.backends.sagemaker",
    "sagemaker-local": "smdist.backends.sagemaker_local",
}
DEFAULT_BACKEND = "local"
# The options each backend's ``launch`` takes: an unknown one is refused before anything runs,
# the same way for every backend (never a TypeError from one and silence from another).
BACKEND_OPTIONS = {
    "local": frozenset(
        {
            "hosts",
            "processes_per_host",
            "root",
            "grace",
            "stall_timeout",
            "max_run",
            "use_gpus",
            "python",
            "job_name",
            "console",
        }
    ),
    "sagemaker": frozenset({"bucket", "role", "region", "boto_session", "poll_seconds"}),
    "sagemaker-local": frozenset(
        {"pass_aws_credentials", "region", "boto_session", "bucket", "output_dir", "role"}
    ),
}


def check_options(backend: str, options: dict[str, Any]) -> None:
    """SpecError naming every option ``backend`` does not take, and what it takes."""
    known = BACKEND_OPTIONS[backend]
    unknown = sorted(set(options) - known)
    if unknown:
        raise SpecError(
            [
                Problem(
                    f"options.{name}",
                    f"is not an option of the {backend} backend",
                    None,
                    ", ".join(sorted(known)),
                )
                for name in unknown
            ]
        )


def _spec_from(spec: Any, fields: dict[str, Any]):
    """The JobSpec ``fit`` runs: given whole, as a job file's path, or as keyword fields.

    Fields may be typed objects (``PyTorchDDP()``, ``Cluster(...)``), dicts, or a mix; they are
    validated as they are, never dumped and re-read (a dump that leaves defaults out would lose
    the ``kind`` that picks the strategy).
    """
    from smdist.spec import as_job_spec

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
        raise SpecError([Problem("backend", "unknown backend", backend, ", ".join(BACKENDS))])
    from smdist.disk_checks import check_paths
    from smdist.planning import plan as make_plan

    check_options(backend, options or {})
    job_spec = _spec_from(spec, fields)
    problems = check_paths(job_spec)  # planning reads no disk: paths are checked here
    if problems:
        raise SpecError(problems)
    module = importlib.import_module(BACKENDS[backend])
    job = module.launch(make_plan(job_spec), **(options or {}))
    if wait:
        job.wait(logs=logs)
    return job


__all__ = ["BACKENDS", "Job", "JobError", "JobStatus", "fit"]
