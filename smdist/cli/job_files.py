"""A job file read into its plan, refused (with every problem) before anything runs."""

from __future__ import annotations

from pathlib import Path

from smdist.errors import SpecError


def load_plan(path: Path, submittable: bool = False):
    """The job file's plan; with ``submittable``, also refused for what ``submit`` would refuse
    under the installed SDK line (so ``validate`` and ``plan`` know it before any cost)."""
    from smdist.checks.reading import load
    from smdist.planning.plan import plan

    made = plan(load(path))
    if submittable:
        from smdist.backends.sagemaker import submission_problems

        problems = submission_problems(made)
        if problems:
            raise SpecError(problems)
    return made
