"""Installed by smdist's local backend on the emulated hosts' PYTHONPATH: SageMaker's library
names answered by smdist's stand-ins when the real libraries are absent
(``_smdist_standins``). A ``sitecustomize`` later on the path still runs."""

import importlib.util
import sys
from pathlib import Path

import _smdist_standins

_smdist_standins.install()


def _run_next_sitecustomize() -> None:
    """The ``sitecustomize`` this one hides (a distribution's, a virtualenv's), if any."""
    here = Path(__file__).resolve().parent
    for entry in sys.path:
        try:
            directory = Path(entry or ".").resolve()
        except OSError:
            continue
        candidate = directory / "sitecustomize.py"
        if directory == here or not candidate.is_file():
            continue
        spec = importlib.util.spec_from_file_location("_sitecustomize_next", candidate)
        if spec is not None and spec.loader is not None:
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        return


_run_next_sitecustomize()
