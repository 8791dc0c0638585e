"""Starting a local job: prepare its hosts, then start them; nothing is left of a start that
failed but the job's Failed record saying why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smdist.backends.local.job import LocalJob
from smdist.backends.local.options import LocalOptions
from smdist.backends.local.preparation.setup import PrepareError
from smdist.backends.local.processes import proctree as local_proctree

if TYPE_CHECKING:
    from smdist.planning.plan import Plan


def launch(plan: Plan, **options: Any) -> LocalJob:
    """``start(plan, LocalOptions)`` with the options as keywords."""
    return start(plan, LocalOptions.read("local", options))


def start(plan: Plan, options: LocalOptions) -> LocalJob:
    """Prepare the emulated hosts and start the job; returns at once (``wait()`` follows it).

    Raises SpecError for options or inputs that cannot work, PrepareError when this machine
    lacks what the distribution needs; nothing is started in either case, what preparation
    copied is removed, and a job folder made meanwhile keeps a Failed record saying why.
    """
    if not local_proctree.available():
        raise PrepareError("the local backend needs Linux (/proc) to supervise its processes")
    job = LocalJob(plan, options)
    try:
        job.prepare()
    except BaseException as error:
        job.abandon(error)
        raise
    job.start()
    return job
