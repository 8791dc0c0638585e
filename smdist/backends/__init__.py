"""Where a job runs: the backend interface (``base.Backend``), its options (``options``) and the
one table of backends (``registry``).

``smdist.fit`` (``smdist.fitting``) plans a job once and hands the Plan to one backend; no
backend plans again. Backends load lazily: the SageMaker SDK is imported only by the
SageMaker backends, the local emulator only when it runs.
"""

from __future__ import annotations

from smdist.backends.base import Backend, Job, JobError, JobStatus
from smdist.backends.registry import BACKENDS, DEFAULT_BACKEND

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "Backend", "Job", "JobError", "JobStatus"]
