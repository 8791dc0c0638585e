"""A search needs the job's ``tuning:`` section: refused naming the field when it is missing,
the same way for ``smdist.tune``, ``smdist tune`` and a tuning job's request."""

from __future__ import annotations

from typing import Any

from smdist.errors import Problem, SpecError


def require_tuning(spec: Any) -> Any:
    """``spec.tuning``; SpecError naming the field when the job states no search."""
    if spec.tuning is None:
        raise SpecError(
            [
                Problem(
                    "tuning",
                    "is missing: the job file states no search",
                    None,
                    "a tuning: section with objective, parameters and max_jobs "
                    "(examples/tuning/pytorch_ddp.yaml)",
                )
            ]
        )
    return spec.tuning
