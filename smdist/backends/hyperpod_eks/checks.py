"""What a plan must be to run as a HyperPodPyTorchJob, checked before anything is rendered or
sent: refusals (exit 2, the field named) and the settings that mean something else there.

On HyperPod EKS every pod's ranks are started by ``hyperpodrun`` (hyperpod-elastic-agent:
torchrun's launcher with the operator as its rendezvous), so a plan runs there when its ranks
are torchrun's: SageMaker's ``torch_distributed`` runner (``Launcher.TORCHRUN``: the program is
what torchrun starts) or smdist's torchrun launcher (the program once per host starting
torchrun itself: here hyperpodrun starts the training script instead). Pure: no file is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist.backends.hyperpod_eks.options import DNS_LABEL, DNS_LABEL_VALID
from smdist.checks.hyperpod import cluster_problems, distribution_problems
from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.runtime.settings import TRAINING_SCRIPT

if TYPE_CHECKING:
    from smdist.backends.hyperpod_eks.options import HyperPodEksOptions
    from smdist.planning.plan import Plan

RUNS = (
    "pytorch_ddp (launcher torchrun or torch_distributed), or sdmp version 2: the PyTorch "
    "strategies whose ranks torchrun starts"
)
_WHY_NOT = {
    Launcher.MPIRUN: "its ranks start from one mpirun on the first host reaching the others "
    "over ssh; the training operator starts hyperpodrun in every pod and no mpirun",
    Launcher.SMDDP: "its ranks start from one mpirun behind smddprun; the training operator "
    "starts hyperpodrun (torchrun's launcher) in every pod",
    Launcher.TF_CONFIG: "TensorFlow's workers need TF_CONFIG; the HyperPod training operator "
    "runs PyTorch jobs (HyperPodPyTorchJob) only",
    Launcher.PARAMETER_SERVER: "TensorFlow's parameter servers need the TensorFlow toolkit's "
    "host steps; the HyperPod training operator runs PyTorch jobs only",
}


def worker_script(plan: Plan) -> str | None:
    """The script hyperpodrun starts in every rank, or None when torchrun starts none."""
    launch = plan.launch
    if plan.framework != "pytorch":
        return None
    if launch.launcher is Launcher.TORCHRUN:
        return launch.program
    if launch.launcher is Launcher.PROGRAM:
        return plan.environment.get(TRAINING_SCRIPT)
    return None


def refusals(plan: Plan, options: HyperPodEksOptions) -> list[Problem]:
    """Every reason ``plan`` cannot run as a HyperPodPyTorchJob with ``options``."""
    return (
        cluster_problems(
            plan.spec.cluster,
            one_type="a HyperPodPyTorchJob here runs one replica set on nodes of one instance type",
            nodes="the nodes to run on",
        )
        + _strategy_problems(plan)
        + _input_problems(plan, options)
    )


def name_problems(name: str, field: str) -> list[Problem]:
    """The job's name as Kubernetes takes it: a DNS label (its pods' names start with it)."""
    if DNS_LABEL.match(name):
        return []
    return [Problem(field, "is not a name Kubernetes takes for the job", name, DNS_LABEL_VALID)]


def _strategy_problems(plan: Plan) -> list[Problem]:
    if worker_script(plan) is not None:
        return []
    launcher = plan.launch.launcher
    why = _WHY_NOT.get(launcher, f"its launcher ({launcher.description}) is not hyperpodrun's")
    if plan.framework != "pytorch" and launcher not in _WHY_NOT:
        why = f"it trains with {plan.framework}; the HyperPod training operator runs PyTorch"
    return [
        Problem(
            "strategy.kind",
            f"does not run on hyperpod-eks: {why}",
            plan.spec.strategy.kind,
            RUNS,
        )
    ]


def channel_path(uri: str, options: HyperPodEksOptions) -> str | None:
    """The folder of the shared volume a ``file://`` channel names, relative to its mount
    (None: not a folder of it)."""
    prefix, mount = "file://", options.shared_mount
    if not uri.startswith(prefix + mount + "/"):
        return None
    relative = uri[len(prefix + mount) :].strip("/")
    parts = relative.split("/")
    return None if any(p in ("", ".", "..") for p in parts) else relative


def _input_problems(plan: Plan, options: HyperPodEksOptions) -> list[Problem]:
    problems = []
    valid = (
        f"file://{options.shared_mount}/<folder>: a folder of the shared volume (--pvc), "
        "which every pod reads where it lies"
    )
    for name, source in sorted(plan.spec.inputs.items()):
        uri = source.uri
        if options.pvc is None:
            why = "a channel is a folder of the shared volume, and no --pvc names one"
        elif uri.startswith("s3://"):
            why = (
                "S3 data is not staged into the pods: copy it to the shared volume first "
                f"(aws s3 sync {uri} {options.shared_mount}/...) and give that folder"
            )
        elif channel_path(uri, options) is None:
            why = f"a channel here is a folder under the shared volume's {options.shared_mount}"
        else:
            why = None
        if why is not None:
            problems.append(Problem(f"inputs.{name}.uri", why, uri, valid))
        problems += distribution_problems(name, source.distribution, "pods")
    return problems
