"""The local backend: run a Plan on this machine as SageMaker would run it, without Docker.

``LocalBackend`` (``backend``) puts it on the backend interface; ``starting.start(plan,
options)`` emulates the job's hosts (``algo-1``, ``algo-2``, ...) as
directories standing in for ``/opt/ml``, each with SageMaker's config files, channels, code
and ``SM_*`` environment; starts each distribution the way its container does (a process per
host, torchrun per host, one mpirun across the hosts); streams one log; and
supervises the processes until the job completes, fails or is stopped, leaving none behind.
It returns a ``LocalJob`` (``job``) at once; ``wait()`` follows it.

Its options (``smdist.fit(..., options={...})``, ``smdist run`` flags) are ``LocalOptions``
(``options``).
"""

from __future__ import annotations

from smdist.backends.lazy_exports import lazy_exports

# The package stays light (the command line reads the options of every backend): what it
# exports loads on first use.
_EXPORTS = {
    "LocalJob": "job",
    "LocalOptions": "options",
    "PrepareError": "preparation.setup",
    "start": "starting",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
