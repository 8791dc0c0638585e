"""The value a hyperpod-slurm dry run shows and a submit sends: the sbatch script of one job,
with its folder on the shared file system and the plan it runs.

The plan runs as planned (nodes from ``cluster.instance_count``, processes per node from the
instance type's GPUs); ``--processes-per-node`` resizes it (``Plan.resized``, SMP v2's
parameters fitted by the strategy) for nodes with another count, such as a CPU cluster standing
in for GPU instances.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from smdist.backends.aws_region import dry_run_region
from smdist.backends.hyperpod_slurm.checks import differences, refusals
from smdist.backends.hyperpod_slurm.layout import JobFolder
from smdist.backends.hyperpod_slurm.node_settings import channel_folders, node_settings
from smdist.backends.hyperpod_slurm.sbatch import BatchJob, mounts, pyxis_image, script
from smdist.backends.job_names import unique_job_name
from smdist.errors import SpecError

if TYPE_CHECKING:
    from smdist.backends.hyperpod_slurm.options import HyperPodSlurmOptions
    from smdist.planning.plan import Plan


@dataclass(frozen=True)
class SlurmSubmission:
    """One job: the plan it runs, its folder, where it is submitted, its sbatch script."""

    plan: Plan
    folder: JobFolder
    head_node: str | None
    script: str
    notes: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.folder.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.name,
            "job_folder": str(self.folder.path),
            "head_node": self.head_node,
            "script": self.script,
            "notes": list(self.notes),
        }


def fitted(plan: Plan, per_node: int | None) -> tuple[Plan, list[str]]:
    """``plan`` with ``per_node`` processes on every node (as planned when None)."""
    launch = plan.launch
    if per_node is None or per_node == launch.processes_per_host:
        return plan, []
    notes = [
        f"processes per node: {per_node} (--processes-per-node; the plan's is "
        f"{launch.processes_per_host})"
    ]
    parameters = launch.mp_parameters
    if parameters is not None:
        world = per_node * len(launch.hosts)
        parameters, changed = plan.spec.strategy.fit_mp_parameters(dict(parameters), world)
        notes += changed
    return plan.resized(launch.hosts, per_node, parameters), notes


def summary(plan: Plan, name: str) -> str:
    launch = plan.launch
    return (
        f"{name}: {plan.spec.strategy.kind} ({launch.launcher.description}) on "
        f"{len(launch.hosts)} x {launch.instance_type}, {launch.processes_per_host} "
        "process(es) per node"
    )


def build(plan: Plan, options: HyperPodSlurmOptions) -> SlurmSubmission:
    """The job ``plan`` is as an sbatch job; SpecError (exit 2) for what cannot run there."""
    refused = refusals(plan)
    if refused:
        raise SpecError(refused)
    running, notes = fitted(plan, options.processes_per_node)
    name = options.job_name or unique_job_name(plan.spec.name)
    given = options.checkpoint_dir
    folder = JobFolder(
        PurePosixPath(options.job_root), name, PurePosixPath(given) if given else None
    )
    region, region_note = dry_run_region(options.region, plan.spec.region)
    settings = node_settings(running, folder, region=region, master_port=options.master_port)
    image = plan.spec.code.image_uri
    channels = [channel["path"] for channel in channel_folders(plan).values()]
    batch = BatchJob(
        folder=folder,
        nodes=len(running.launch.hosts),
        max_run=plan.spec.max_run,
        node_settings=settings,
        python=options.python or ("python" if image else "python3"),
        summary=summary(running, name),
        partition=options.partition,
        efa=running.launch.efa,
        container_image=pyxis_image(image) if image else None,
        container_mounts=mounts(options.job_root, str(folder.checkpoints), *channels),
    )
    notes += differences(plan)
    if region_note:
        notes.append(f"no AWS region is configured: the job's SAGEMAKER_REGION is {region}")
    return SlurmSubmission(running, folder, options.head_node, script(batch), tuple(notes))
