"""The one table of backends: every place a job runs, by the name users give it.

Adding a backend is a package with a ``Backend`` subclass and one line here; the command line,
``smdist.fit`` and ``smdist.tune`` find it through this table and know no backend by name.
A backend's module loads only when it is asked for (the SageMaker SDK, Docker's checks and the
local emulator stay unloaded until a job needs them).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

from smdist.errors import OPTION, Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.base import Backend

# name -> "module:class", in the order a job name is looked for (this machine's records first)
BACKENDS = {
    "local": "smdist.backends.local.backend:LocalBackend",
    "sagemaker": "smdist.backends.sagemaker.backend:SageMakerBackend",
    "sagemaker-local": "smdist.backends.sagemaker.local_mode.backend:LocalModeBackend",
    "hyperpod-slurm": "smdist.backends.hyperpod_slurm.backend:HyperPodSlurmBackend",
    "hyperpod-eks": "smdist.backends.hyperpod_eks.backend:HyperPodEksBackend",
}
DEFAULT_BACKEND = "local"  # smdist.fit, smdist run, smdist tune --local
DEFAULT_SUBMIT_BACKEND = "sagemaker"  # smdist submit, smdist tune


@cache
def get(name: str, field: str = "backend") -> Backend:
    """The backend ``name``; SpecError (exit 2) naming the valid ones for any other."""
    if name not in BACKENDS:
        raise SpecError([Problem(field, "unknown backend", name, ", ".join(BACKENDS))], OPTION)
    module, _, cls = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), cls)()


def names(*, command: str | None = None, tunes: bool = False) -> list[str]:
    """The backends' names, optionally only those ``command`` (run, submit) starts or that run
    a hyperparameter search."""
    found = []
    for name in BACKENDS:
        backend = get(name)
        if command is not None and backend.command != command:
            continue
        if tunes and not backend.tunes:
            continue
        found.append(name)
    return found


def all_backends() -> list[Backend]:
    return [get(name) for name in BACKENDS]
