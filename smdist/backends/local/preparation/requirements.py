"""The Python packages a local job cannot start without, checked before anything starts.

smdist knows what its own parts import: torchrun (SageMaker's ``torch_distributed`` start,
SMP v2, and smdist's torchrun launcher, which runs it on every host) needs torch, Horovod jobs
need horovod, and each ready entry point needs its framework. A user's own script under a
plain launcher (a process per host, mpirun) needs whatever it imports, which smdist cannot
know, so nothing is asked for it. Modules are looked up (``find_spec``), not imported: in this
Python that takes microseconds, in another one (``options={"python": ...}``) one short run of it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from smdist.backends.local.preparation.layout import LocalLayout
from smdist.contract.commands import Launcher
from smdist.errors import SetupError
from smdist.packaging.bundle import LAUNCHER_SCRIPT

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

FRAMEWORK_MODULES = {"pytorch": "torch", "tensorflow": "tensorflow"}
# How to add a module that pip does not install as ``pip install <module>`` would.
HOROVOD_BUILD = (
    "build it with `SMDIST_VENV=<that virtualenv> bash .ci/install-horovod` (README: Horovod; "
    "its last release does not build against torch 2.x as published)"
)
_PROBE = (
    "import importlib.util, sys; "
    "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
)


def required_modules(plan: Plan, layout: LocalLayout) -> dict[str, str]:
    """The modules the job imports before any user code runs, each with why."""
    strategy = plan.spec.strategy
    needed: dict[str, str] = {}
    if plan.program == LAUNCHER_SCRIPT:
        needed["torch"] = "smdist's torchrun launcher runs torchrun on every host"
    elif layout.launcher is Launcher.TORCHRUN:
        needed["torch"] = "the job starts with torchrun on every host"
    needed.update(strategy.rank_modules())
    if plan.source_dir is None:  # smdist's ready entry point: its framework, always
        module = FRAMEWORK_MODULES.get(plan.framework)
        if module is not None:
            needed.setdefault(module, f"the ready entry point {plan.entry_point} trains with it")
    return needed


def missing_modules(python: str, modules: list[str]) -> list[str]:
    """The ``modules`` that ``python`` cannot find."""
    if not modules:
        return []
    # Paths, not their targets: a virtualenv's python links to its base interpreter.
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        return [module for module in modules if importlib.util.find_spec(module) is None]
    try:
        probe = subprocess.run(
            [python, "-c", _PROBE, *modules], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SetupError(f"options.python: {python!r} cannot be run: {error}") from None
    if probe.returncode != 0:
        said = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        raise SetupError(f"options.python: {python!r} cannot be run: {said}")
    return probe.stdout.split()


def missing_requirements(plan: Plan, layout: LocalLayout, python: str) -> list[str]:
    """One sentence per module the job needs and ``python`` lacks: what, why, how to add it."""
    needed = required_modules(plan, layout)
    sentences = []
    for module in missing_modules(python, list(needed)):
        how = HOROVOD_BUILD if module == "horovod" else f"`{python} -m pip install {module}`"
        sentences.append(
            f"{module} is not installed for the Python that runs the job ({python}), and "
            f"{needed[module]}: install it there ({how}), or run the job with a Python that "
            "has it (smdist.fit: options={'python': ...})"
        )
    return sentences
