"""Which backend a command's ``--backend`` names, checked against the command: ``smdist run``
supervises a job to its end in this process, ``smdist submit`` sends one that runs on without
it (``Backend.command``). A backend of the other kind is pointed to the command that starts it.
"""

from __future__ import annotations

from typing import Any

from smdist.backends import registry
from smdist.errors import OPTION, Problem, SpecError


def chosen(name: str, command: str) -> Any:
    """The backend ``name`` if ``command`` starts its jobs; else an option error (exit 2)."""
    valid = registry.names(command=command)
    if name not in registry.BACKENDS:
        if command == "run":
            raise _run_refusal(name, registry.DEFAULT_SUBMIT_BACKEND)
        raise SpecError(
            [Problem("--backend", f"is not one of {command}'s backends", name, ", ".join(valid))],
            OPTION,
        )
    backend = registry.get(name)
    if backend.command == command:
        return backend
    if command == "run":
        raise _run_refusal(name, name)
    said = f"{name} jobs run with `smdist {backend.command} FILE`, not {command}"
    raise SpecError([Problem("--backend", said, None, ", ".join(valid))], OPTION)


def _run_refusal(name: str, instead: str) -> SpecError:
    here = registry.names(command="run")
    kinds = "; ".join(f"{n}: {registry.get(n).summary}" for n in here)
    said = (
        f"run is always {' or '.join(here)} ({kinds}); to send the job elsewhere, use "
        f"`smdist submit FILE --backend {instead}`"
    )
    return SpecError([Problem("--backend", said, name, ", ".join(here))], OPTION)
