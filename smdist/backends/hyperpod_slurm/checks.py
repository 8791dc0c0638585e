"""What a plan must be to run as an sbatch job on a HyperPod Slurm cluster, checked before
anything is written or started: refusals (exit 2, the field named) and the settings that run
differently there (notes).

Ranks start the way the SageMaker container starts them for the launchers this backend runs:
the program once per node (smdist's torchrun launcher) or torchrun on every node (SageMaker's
``torch_distributed``, SMP v2). Pure: no file is read and nothing is started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist.checks.hyperpod import (
    cluster_problems,
    distribution_problems,
    service_setting_notes,
)
from smdist.contract.launch import Launcher
from smdist.errors import Problem

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

RUN_LAUNCHERS = (Launcher.PROGRAM, Launcher.TORCHRUN)
RUNS = (
    "pytorch_ddp (launcher torchrun or torch_distributed), or sdmp version 2: the PyTorch "
    "strategies whose ranks torchrun starts"
)
_WHY_NOT = {
    Launcher.MPIRUN: "its ranks start from one mpirun on the first host reaching the others "
    "over ssh (SageMaker's MPIRunner); this backend starts every node's ranks with srun and "
    "torchrun, and runs no mpirun job yet",
    Launcher.SMDDP: "its ranks start from one mpirun on the first host behind smddprun "
    "(SageMaker's SMDataParallelRunner), which this backend does not run; SMDDP's collectives "
    "also need its library in the environment",
    Launcher.TF_CONFIG: "TensorFlow's workers need the TensorFlow container's TF_CONFIG runner, "
    "which this backend does not run yet",
    Launcher.PARAMETER_SERVER: "TensorFlow's parameter servers need the TensorFlow toolkit's "
    "host steps, which this backend does not run yet",
}
CHANNEL_VALID = (
    "file:///<path>: a folder of the cluster's shared file system (e.g. file:///fsx/data/train), "
    "which every node reads where it lies"
)


def refusals(plan: Plan) -> list[Problem]:
    """Every reason ``plan`` cannot run on a HyperPod Slurm cluster."""
    return (
        cluster_problems(
            plan.spec.cluster,
            one_type="an sbatch job runs on the nodes of one partition: a heterogeneous "
            "cluster of instance groups has no equivalent there",
            nodes="one partition's nodes",
        )
        + _strategy_problems(plan)
        + _input_problems(plan)
    )


def _strategy_problems(plan: Plan) -> list[Problem]:
    launcher = plan.launch.launcher
    if plan.framework == "pytorch" and launcher in RUN_LAUNCHERS:
        return []
    why = _WHY_NOT.get(launcher, f"its launcher ({launcher.description}) is not run here")
    if plan.framework != "pytorch" and launcher in RUN_LAUNCHERS:
        why = f"it trains with {plan.framework}; this backend runs PyTorch's launchers only"
    return [
        Problem(
            "strategy.kind",
            f"does not run on hyperpod-slurm: {why}",
            plan.spec.strategy.kind,
            RUNS,
        )
    ]


def _input_problems(plan: Plan) -> list[Problem]:
    problems = []
    for name, source in plan.spec.inputs.items():
        uri = source.uri
        if uri.startswith("s3://"):
            why = (
                "S3 data is not staged by this backend: copy it to the shared file system "
                f"first (aws s3 sync {uri} /fsx/...) and give that folder"
            )
        elif source.file_system is not None:
            why = (
                "a file system channel is read where the cluster mounts it: give that path "
                "(HyperPod mounts FSx for Lustre at /fsx)"
            )
        elif not uri.startswith("file:///"):
            why = "a channel here is an absolute folder of the shared file system"
        else:
            why = None
        if why is not None:
            problems.append(Problem(f"inputs.{name}.uri", why, uri, CHANNEL_VALID))
        problems += distribution_problems(name, source.distribution, "nodes")
    return problems


def differences(plan: Plan) -> list[str]:
    """The job's settings that have no effect, or another one, on a HyperPod Slurm cluster."""
    return service_setting_notes(
        plan.spec,
        checkpoints="the shared checkpoint folder, which a requeued or auto-resumed job reads "
        "again",
        model="the job folder's model/",
        on="a HyperPod cluster's nodes",
    )
