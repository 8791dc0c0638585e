"""The dry-run value: what ``smdist submit --dry-run`` shows is what ``launch`` hands over.

``dry_run(plan, route, ...)`` binds the plan to one job (a ``Submission``) and renders the
route's request from it, with no AWS call and no credentials. A route's ``send`` takes that
value and does only what it says: put the code at ``source_uri`` (from ``code``), then send
``request`` (TorchX's ``schedule(submit_dryrun(...))``). ``launch`` is ``send(dry_run(...))``
with the account's values resolved first (``sending.launch``), so the request sent is the one
a dry run with those values shows, by construction.

Where the account would say, a dry run made without it shows placeholders (``<role>``,
``<default bucket>``, a stand-in region); a value holding one is shown, never sent
(``placeholders``). The one change a send may make is ``renamed``: a fresh job name when
SageMaker says the name is taken, the value rendered again for it by the same function.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from smdist.backends.aws_region import dry_run_region
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker.account import BUCKET_VARIABLE, resolve_role
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan
from smdist.planning.submission import Submission

ROLE_PLACEHOLDER = "<role>"
BUCKET_PLACEHOLDER = "<default bucket>"


@dataclass(frozen=True)
class Route:
    """One way a job goes to SageMaker: SDK v3's request, SDK v2's estimator, a tuning job.

    The dry run needs ``check``, ``render``, ``caller`` and ``fresh_name``; ``sending.launch``
    adds ``default_bucket`` (the installed SDK's) and ``send`` (the value in, the job out).
    """

    name: str
    request_key: str  # the API call the request is for, as the dry run labels it
    check: Callable[[Plan], None]  # what the route refuses before packing and any AWS call
    render: Callable[[Submission], dict[str, Any]]
    caller: Callable[[Plan], str]  # who sends it, in the user's words
    fresh_name: Callable[[Plan], str]  # a new job's name
    default_bucket: Callable[[Any], str]
    send: Callable[..., Any]


@dataclass(frozen=True)
class PackedCode:
    """The job's code as it would ship: the bundle's files and their content digest."""

    entries: list[tuple[Path, str]]
    digest: str

    @property
    def files(self) -> list[str]:
        return [arcname for _, arcname in self.entries]


@dataclass(frozen=True)
class DryRun:
    """What ``launch`` sends: the request, the Submission it was rendered from, and the code
    that must be at ``source_uri`` first; ``route.send`` takes it as it is."""

    request: dict[str, Any]
    submission: Submission
    code: PackedCode
    warnings: list[str]
    route: Route = field(repr=False, compare=False)
    placeholders: tuple[str, ...] = ()  # "role", "bucket", "region": shown, not resolved

    @property
    def plan(self) -> Plan:
        return self.submission.plan

    @property
    def job_name(self) -> str:
        return self.submission.job_name

    @property
    def source_uri(self) -> str:
        return self.submission.code_uri

    @property
    def files(self) -> list[str]:
        return self.code.files

    @property
    def content_digest(self) -> str:
        return self.code.digest

    @property
    def estimator(self) -> str:
        return self.route.caller(self.plan)

    @property
    def excluded_secrets(self) -> list[str]:
        """Secrets in ``source_dir`` left out of the code (walked only when shown)."""
        source_dir = self.plan.spec.code.source_dir
        return packaging.excluded_secrets(Path(source_dir)) if source_dir else []

    def renamed(self, job_name: str) -> DryRun:
        """The same value for another job name: bound and rendered again as ``dry_run`` does
        (the name is in the request: TrainingJobName, ``sagemaker_job_name``, TF's model_dir)."""
        submission = _bind(self.plan, job_name, self.submission)
        return replace(self, submission=submission, request=self.route.render(submission))

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "source_uri": self.source_uri,
            "content_digest": self.content_digest,
            "files": self.files,
            "excluded_secrets": self.excluded_secrets,
            "warnings": self.warnings,
            self.route.request_key: self.request,
        }


def pack(plan: Plan, route: Route) -> PackedCode:
    """What the route refuses, then the code's bundle: bad input fails here, before AWS."""
    route.check(plan)
    request_.check_cloud_spec(plan.spec)
    entries = packaging.bundle(plan)
    return PackedCode(entries, packaging.content_digest(entries))


def _bind(plan: Plan, job_name: str, like: Submission) -> Submission:
    return plan.bind(
        job_name=job_name,
        region=like.region,
        bucket=like.bucket,
        role=like.role,
        code_uri=like.code_uri,
    )


def dry_run(
    plan: Plan,
    route: Route,
    *,
    bucket: str | None = None,
    role: str | None = None,
    region: str | None = None,
    job_name: str | None = None,
    code: PackedCode | None = None,
) -> DryRun:
    """``plan`` bound and rendered for ``route``, placeholders where no value is given.

    ``code``: the plan's packed code when the caller packed it already (``sending.launch``
    packs before resolving the account, so bad code fails before any AWS call)."""
    code = code or pack(plan, route)
    job_bucket = bucket or os.environ.get(BUCKET_VARIABLE) or BUCKET_PLACEHOLDER
    job_role = resolve_role(plan, role) or ROLE_PLACEHOLDER
    job_region, region_note = dry_run_region(region, plan.spec.region)
    missing = {
        "role": job_role == ROLE_PLACEHOLDER,
        "bucket": job_bucket == BUCKET_PLACEHOLDER,
        "region": region_note is not None,
    }
    submission = plan.bind(
        job_name=job_name or route.fresh_name(plan),
        region=job_region,
        bucket=job_bucket,
        role=job_role,
        code_uri=request_.source_uri(job_bucket, code.digest),
    )
    return DryRun(
        request=route.render(submission),
        submission=submission,
        code=code,
        warnings=[str(w) for w in plan.warnings] + ([region_note] if region_note else []),
        placeholders=tuple(name for name, is_missing in missing.items() if is_missing),
        route=route,
    )


__all__ = [
    "BUCKET_PLACEHOLDER",
    "BUCKET_VARIABLE",
    "ROLE_PLACEHOLDER",
    "DryRun",
    "PackedCode",
    "Route",
    "dry_run",
    "pack",
]
