"""A job file read into its plan, refused (with every problem) before anything runs."""

from __future__ import annotations

from pathlib import Path

from smdist.errors import SpecError


def load_plan(path: Path, submittable: bool = False, file_inputs_here: bool = True):
    """The job file's plan; with ``submittable``, also refused for what ``submit`` would refuse
    under the installed SDK line (so ``validate`` and ``plan`` know it before any cost).
    ``file_inputs_here``: as the chosen backend's (``Backend.file_inputs_here``)."""
    # lazy: the job models and the planner; smdist --help imports this module
    from smdist.checks.reading import load
    from smdist.planning.plan import plan

    made = plan(load(path, file_inputs_here=file_inputs_here))
    if submittable:
        # lazy: the backends' table, for a submittable check only
        from smdist.backends import registry

        problems = registry.get(registry.DEFAULT_SUBMIT_BACKEND).submission_problems(made)
        if problems:
            raise SpecError(problems)
    return made
