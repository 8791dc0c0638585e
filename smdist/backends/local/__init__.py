"""The local backend: run a Plan on this machine as SageMaker would run it, without Docker.

``launch(plan, **options)`` emulates the job's hosts (``algo-1``, ``algo-2``, ...) as
directories standing in for ``/opt/ml``, each with SageMaker's config files, channels, code
and ``SM_*`` environment; starts each distribution the way its container does (a process per
host, torchrun per host, one mpirun across the hosts); streams one log; and
supervises the processes until the job completes, fails or is stopped, leaving none behind.
It returns a ``LocalJob`` (``job``) at once; ``wait()`` follows it.

Its options (``smdist.fit(..., options={...})``, ``smdist run`` flags) are ``LocalOptions``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smdist.backends.local import proctree as local_proctree
from smdist.backends.local.job import LocalJob
from smdist.backends.local.setup import LocalOptions, PrepareError

if TYPE_CHECKING:
    from smdist.planning.plan import Plan


def launch(plan: Plan, **options: Any) -> LocalJob:
    """Prepare the emulated hosts and start the job; returns at once (``wait()`` follows it).

    Raises SpecError for options or inputs that cannot work, PrepareError when this machine
    lacks what the distribution needs; nothing is started in either case, what preparation
    copied is removed, and a job folder made meanwhile keeps a Failed record saying why.
    """
    if not local_proctree.available():
        raise PrepareError("the local backend needs Linux (/proc) to supervise its processes")
    job = LocalJob(plan, LocalOptions.from_keywords(options))
    try:
        job._prepare()
    except BaseException as error:
        job._cancel_start()
        job.release()
        job._abandon(error)
        raise
    job._start()
    return job


__all__ = ["LocalJob", "LocalOptions", "PrepareError", "launch"]
