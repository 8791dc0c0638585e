"""What runs differently on a HyperPod EKS cluster than on SageMaker: the notes a dry run and a
submit show (stderr), never refusals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist.checks.hyperpod import service_setting_notes

if TYPE_CHECKING:
    from smdist.backends.hyperpod_eks.options import HyperPodEksOptions
    from smdist.planning.plan import Plan


# hyperpod-elastic-agent 1.1.3 (2026-05, the newest) declares torch<2.12, and its hyperpodrun
# exits at start under torch 2.13: argparse refuses its --shutdown-timeout, a flag torchrun's
# own parser now has (read and run 2026-11-29).
AGENT = "hyperpod-elastic-agent 1.1.3"
AGENT_TORCH_BELOW = (2, 12)


def _agent_note(plan: Plan, options: HyperPodEksOptions) -> list[str]:
    version = plan.spec.code.framework_version
    if options.image or plan.spec.code.image_uri or not version:
        return []
    numbers = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    if numbers < AGENT_TORCH_BELOW:
        return []
    return [
        f"the PyTorch {version} image carries no hyperpodrun, and {AGENT} (the newest) runs "
        "on torch < 2.12 only (its hyperpodrun stops at start under 2.13): give --image or "
        "code.image_uri, an image with an agent for this torch, or code.framework_version 2.11"
    ]


def differences(plan: Plan, options: HyperPodEksOptions) -> list[str]:
    """The job's settings without effect, or with another one, on HyperPod EKS."""
    spec = plan.spec
    notes = [
        *_agent_note(plan, options),
        "the image must carry hyperpodrun (pip install hyperpod-elastic-agent): every pod "
        "starts it, and it starts the ranks",
        "the pods have no SM_HOSTS, SM_CURRENT_HOST or SM_TRAINING_ENV (the operator names "
        "no host before a pod starts): ranks read RANK, WORLD_SIZE and MASTER_ADDR",
    ]
    if options.pvc is None:
        notes.append(
            "no --pvc: model, checkpoints and output live in each pod and are gone with it; a "
            "pod the operator restarts starts over"
        )
    notes += service_setting_notes(
        spec,
        checkpoints="the job's checkpoints folder, which a restarted pod reads again",
        model="the job's model folder",
        on="a HyperPod cluster's pods",
    )
    return notes
