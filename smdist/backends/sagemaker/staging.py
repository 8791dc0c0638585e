"""What both SDK lines do before their request: resolve the account's parts and put the code
in S3.

Checks first (a bad source_dir or entry point fails before any AWS call), then the boto3
session, the role, the bucket (a named one must exist: one HeadBucket; otherwise the SDK's
default bucket, the only one ever created), and the code's content-addressed upload. The
result binds the plan to one job name at a time, as ``launch`` retries names.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.backends.sagemaker.account import require_role
from smdist.backends.sagemaker.buckets import require_bucket
from smdist.backends.sagemaker.dry_run import BUCKET_VARIABLE
from smdist.backends.sagemaker.upload import SourceUpload, upload_source
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission


@dataclass(frozen=True)
class Staged:
    """A plan's account-specific parts, resolved, and its code in S3."""

    plan: Plan
    boto: Any
    role: str
    bucket: str
    upload: SourceUpload

    @property
    def kms_key(self) -> str | None:
        return self.plan.estimator_kwargs.get("output_kms_key")

    def bind(self, job_name: str) -> Submission:
        return self.plan.bind(
            job_name=job_name,
            region=self.boto.region_name,
            bucket=self.bucket,
            role=self.role,
            code_uri=self.upload.uri,
        )


def stage(
    plan: Plan,
    *,
    bucket: str | None,
    role: str | None,
    region: str | None,
    boto_session: Any,
    default_bucket: Callable[[Any], str],
) -> Staged:
    """``plan`` ready to send; ``default_bucket(boto)``: the installed SDK's default bucket."""
    spec = plan.spec
    request_.check_cloud_spec(spec)
    entries = packaging.bundle(plan)  # bad source_dir / entry point fails before any AWS call
    boto = sdk.boto_session(region or spec.region, boto_session)
    job_role = require_role(plan, role)
    job_bucket = bucket or os.environ.get(BUCKET_VARIABLE)
    if job_bucket:
        require_bucket(boto, job_bucket, "--bucket" if bucket else BUCKET_VARIABLE)
    else:  # only the SDK's default bucket is ever created
        job_bucket = default_bucket(boto)
    kms = plan.estimator_kwargs.get("output_kms_key")
    return Staged(plan, boto, job_role, job_bucket, upload_source(boto, job_bucket, entries, kms))
