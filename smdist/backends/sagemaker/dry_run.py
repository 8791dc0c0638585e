"""What ``smdist submit --dry-run`` shows, whichever SDK sends the job: the request, the code
that would ship and where, worked out with no AWS call and no credentials.

The SDK v2 and v3 paths build different requests from the same prepared values: the code's
content-addressed S3 location (from the bundle's digest, nothing uploaded), the bucket and the
region, placeholders where the account would say.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smdist.backends.aws_region import dry_run_region
from smdist.backends.sagemaker import request as request_
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan

BUCKET_VARIABLE = "SMDIST_BUCKET"


@dataclass(frozen=True)
class DryRun:
    """What ``launch`` would do: the request, the code it would ship and where."""

    request: dict[str, Any]
    files: list[str]
    source_uri: str
    content_digest: str
    estimator: str
    warnings: list[str]
    excluded_secrets: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "source_uri": self.source_uri,
            "content_digest": self.content_digest,
            "files": self.files,
            "excluded_secrets": self.excluded_secrets,
            "warnings": self.warnings,
            "CreateTrainingJob": self.request,
        }


@dataclass(frozen=True)
class PreparedDryRun:
    """The values both SDK paths show: where the code would go, in which bucket and region."""

    plan: Plan
    entries: list[tuple[Path, str]]
    digest: str
    bucket: str
    region: str
    code_uri: str
    region_note: str | None = None

    def result(self, request: dict[str, Any], estimator: str) -> DryRun:
        spec = self.plan.spec
        return DryRun(
            request=request,
            files=[arcname for _, arcname in self.entries],
            source_uri=self.code_uri,
            content_digest=self.digest,
            estimator=estimator,
            warnings=[str(w) for w in self.plan.warnings]
            + ([self.region_note] if self.region_note else []),
            excluded_secrets=packaging.excluded_secrets(Path(spec.code.source_dir))
            if spec.code.source_dir
            else [],
        )


def prepare_dry_run(plan: Plan, *, bucket: str | None, region: str | None) -> PreparedDryRun:
    request_.check_cloud_spec(plan.spec)
    entries = packaging.bundle(plan)
    digest = packaging.content_digest(entries)
    job_bucket = bucket or os.environ.get(BUCKET_VARIABLE) or "<default bucket>"
    shown_region, note = dry_run_region(region, plan.spec.region)
    return PreparedDryRun(
        plan=plan,
        entries=entries,
        digest=digest,
        bucket=job_bucket,
        region=shown_region,
        code_uri=request_.source_uri(job_bucket, digest),
        region_note=note,
    )
