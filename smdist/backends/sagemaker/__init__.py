"""Real SageMaker training jobs: as SDK v3 sends them when it is installed, else through v2.

``dry_run(plan)`` is the value ``smdist submit --dry-run`` shows: the plan bound to the job (a
``Submission``), the request rendered from it by the installed SDK line's route (``v3.submit``
with SDK 3.x, ``smdist[sagemaker]``; ``v2`` with 2.x, ``smdist[sagemaker-v2]``), and the code
that must be in S3 first, with no AWS call. ``send(value)`` hands that value over as it is;
``launch(plan)`` is ``send(dry_run(plan))`` with the account's values resolved first. The
code ships once per distinct content (``upload``).

Options (``fit(..., backend="sagemaker", options={...})`` or ``launch(plan, **options)``):
``bucket`` (else ``SMDIST_BUCKET``, else the SDK's default bucket), ``role`` (else the spec's,
else ``SMDIST_ROLE``), ``region`` (else the spec's, else the AWS configuration),
``boto_session``, ``poll_seconds``.
"""

from __future__ import annotations

from smdist.backends.lazy_exports import lazy_exports

# The package stays light (the command line reads the options of every backend): its
# functions load from ``service`` on first use, its submodules on import.
_SERVICE = (
    "DryRun",
    "SageMakerJob",
    "attach_job",
    "default_bucket",
    "dry_run",
    "launch",
    "sdk_v3_installed",
    "send",
    "submission_problems",
)
__getattr__ = lazy_exports(__name__, dict.fromkeys(_SERVICE, "service"))
__all__ = list(_SERVICE)
