"""The account-specific parts of a job that smdist resolves before any call: its IAM role.

``role:`` in the job file, else the caller's (``--role``, ``role=``), else ``SMDIST_ROLE``, else
(inside SageMaker notebooks and Studio) the execution role the SDK finds.
"""

from __future__ import annotations

import os

from smdist.backends.sagemaker import sdk as sdk
from smdist.errors import Problem, SpecError
from smdist.planning.plan import Plan

ROLE_VARIABLE = "SMDIST_ROLE"


def resolve_role(plan: Plan, role: str | None) -> str | None:
    return plan.spec.role or role or os.environ.get(ROLE_VARIABLE) or None


def require_role(plan: Plan, role: str | None) -> str:
    resolved = resolve_role(plan, role)
    if resolved:
        return resolved
    try:  # inside SageMaker notebooks and Studio the execution role is known
        sdk.import_sagemaker()
        from sagemaker import get_execution_role

        with sdk.contained():
            return get_execution_role()
    except Exception:  # noqa: BLE001 - any failure means: not in a SageMaker notebook
        raise SpecError(
            [
                Problem(
                    "role",
                    "no IAM role for the job: set `role:` in the job file, pass --role, or "
                    f"export {ROLE_VARIABLE}",
                    valid="arn:aws:iam::<account>:role/<SageMaker execution role>",
                )
            ]
        ) from None
