"""What every node's first step (``node_start``) reads: the plan bound to one job, in the paths
of its folder on the shared file system (``node.json``, written by the batch script).

The wire hyperparameters are the SageMaker request's (``Plan.bind``) with the job's code folder
as its submit directory; the job's environment is the plan's (the spec's, smdist's own
``SMDIST_*``) with the shared checkpoint folder, which SageMaker has no variable for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smdist.backends.hyperpod_slurm.layout import JobFolder
from smdist.runtime.paths import CHECKPOINT_DIR_ENV

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

FILE_SCHEME = "file://"


def channel_folders(plan: Plan) -> dict[str, dict[str, str]]:
    """Each channel's folder on the shared file system (``file:///fsx/...`` -> ``/fsx/...``)."""
    return {
        name: {"path": source.uri[len(FILE_SCHEME) :], "distribution": source.distribution}
        for name, source in sorted(plan.spec.inputs.items())
    }


def node_settings(
    plan: Plan, folder: JobFolder, *, region: str, master_port: int
) -> dict[str, Any]:
    """``node.json`` of ``plan`` run as job ``folder.name``."""
    submission = plan.bind(
        job_name=folder.name,
        region=region,
        bucket=None,
        role=plan.spec.role,
        code_uri=f"{FILE_SCHEME}{folder.code}",
    )
    environment = {**plan.environment, CHECKPOINT_DIR_ENV: str(folder.checkpoints)}
    return {
        "job_name": folder.name,
        "framework": plan.framework,
        "region": region,
        "hyperparameters": dict(submission.wire_hyperparameters),
        "channels": channel_folders(plan),
        "environment": environment,
        "code_dir": str(folder.code),
        "hosts_dir": str(folder.hosts),
        "model_dir": str(folder.model),
        "checkpoint_dir": str(folder.checkpoints),
        "master_port": master_port,
    }
