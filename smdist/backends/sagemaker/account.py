"""The account-specific parts of a job: its IAM role, its bucket, its region.

Role: ``role:`` in the job file, else the caller's (``--role``, ``role=``), else
``SMDIST_ROLE``, else (inside SageMaker notebooks and Studio) the execution role the SDK finds.
Bucket: the caller's, else ``SMDIST_BUCKET`` (either must exist: one HeadBucket), else the
installed SDK's default bucket, the only one ever created. Region: the caller's, the job
file's, else the AWS configuration (``sdk.boto_session``). A dry run shows placeholders for
what it is not given (``dry_run``); ``launch`` resolves them here first (``resolve_account``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.buckets import require_bucket
from smdist.errors import Problem, SpecError
from smdist.planning.plan import Plan

ROLE_VARIABLE = "SMDIST_ROLE"
BUCKET_VARIABLE = "SMDIST_BUCKET"


@dataclass(frozen=True)
class Account:
    """Where a job goes: a boto3 session (its region), the role, the bucket."""

    boto: Any
    role: str
    bucket: str

    @property
    def region(self) -> str:
        return self.boto.region_name


def resolve_account(
    plan: Plan,
    *,
    bucket: str | None,
    role: str | None,
    region: str | None,
    boto_session: Any,
    default_bucket: Callable[[Any], str],
) -> Account:
    """The account's values for ``plan``; ``default_bucket(boto)``: the installed SDK's."""
    boto = sdk.boto_session(region or plan.spec.region, boto_session)
    job_role = require_role(plan, role)
    job_bucket = bucket or os.environ.get(BUCKET_VARIABLE)
    if job_bucket:
        require_bucket(boto, job_bucket, "--bucket" if bucket else BUCKET_VARIABLE)
    else:  # only the SDK's default bucket is ever created
        job_bucket = default_bucket(boto)
    return Account(boto, job_role, job_bucket)


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
