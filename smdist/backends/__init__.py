"""Where a job runs: the backends, and the options each takes.

``smdist.fit`` (``smdist.fitting``) plans a job once and hands the Plan to one of these; no
backend plans again.

Backends load lazily: the SageMaker SDK is imported only by the ``sagemaker`` and
``sagemaker-local`` backends, the local emulator only when it runs.
"""

from __future__ import annotations

from typing import Any

from smdist.backends.base import Job, JobError, JobStatus
from smdist.errors import OPTION, Problem, SpecError

BACKENDS = {
    "local": "smdist.backends.local",
    "sagemaker": "smdist.backends.sagemaker",
    "sagemaker-local": "smdist.backends.sagemaker.local_mode",
}
DEFAULT_BACKEND = "local"
# The options each backend's ``launch`` takes: an unknown one is refused before anything runs,
# the same way for every backend (never a TypeError from one and silence from another).
BACKEND_OPTIONS = {
    "local": frozenset(
        {
            "hosts",
            "processes_per_host",
            "root",
            "grace",
            "stall_timeout",
            "max_run",
            "use_gpus",
            "python",
            "job_name",
            "console",
            "fresh",
            "namespaces",
        }
    ),
    "sagemaker": frozenset({"bucket", "role", "region", "boto_session", "poll_seconds"}),
    "sagemaker-local": frozenset(
        {
            "pass_aws_credentials",
            "region",
            "boto_session",
            "bucket",
            "output_dir",
            "role",
            "root",
            "grace",
            "container_config",
            "shm_size",
            "poll_seconds",
        }
    ),
}


def check_options(backend: str, options: dict[str, Any]) -> None:
    """SpecError naming every option ``backend`` does not take, and what it takes."""
    known = BACKEND_OPTIONS[backend]
    unknown = sorted(set(options) - known)
    if unknown:
        raise SpecError(
            [
                Problem(
                    f"options.{name}",
                    f"is not an option of the {backend} backend",
                    None,
                    ", ".join(sorted(known)),
                )
                for name in unknown
            ],
            OPTION,
        )


__all__ = ["BACKENDS", "Job", "JobError", "JobStatus"]
