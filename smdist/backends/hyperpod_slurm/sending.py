"""Sending a ``SlurmSubmission``: the cluster checked, the job folder written (the code, the
node step, the script), the script submitted with sbatch, and a record kept on this machine.

Nothing is written before the cluster has answered: sbatch runs there, and pyxis is installed
where the job has a container image.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.hyperpod_slurm import node_start, slurm
from smdist.backends.hyperpod_slurm.head import Content, Head, on_path
from smdist.backends.hyperpod_slurm.job import SlurmJob
from smdist.backends.hyperpod_slurm.records import write_record
from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError
from smdist.packaging import bundle as packaging

if TYPE_CHECKING:
    from smdist.backends.hyperpod_slurm.options import HyperPodSlurmOptions
    from smdist.backends.hyperpod_slurm.submission import SlurmSubmission

NO_PYXIS = (
    "runs under pyxis (srun --container-image), which this cluster's srun does not take: "
    "install pyxis and enroot, or leave code.image_uri out and give --python, a Python "
    "environment on the shared file system"
)


def here_problems(image_uri: str | None, head_node: str | None) -> list[str]:
    """What a dry run can tell without contacting a head node: sbatch and pyxis here."""
    if head_node is not None:
        return []
    if not on_path("sbatch"):
        return ["sbatch"]
    if image_uri and not slurm.has_pyxis(Head()):
        return ["pyxis"]
    return []


def refusal(missing: str, image_uri: str | None) -> SpecError:
    if missing == "pyxis":
        problem = Problem("code.image_uri", NO_PYXIS, image_uri)
    else:
        problem = Problem(
            "--head-node",
            "is not given and this machine has no sbatch: a job is submitted on the cluster",
            None,
            "run smdist on the cluster's head or login node, or give --head-node [user@]host",
        )
    return SpecError([problem], CANNOT_RUN_HERE)


def check_cluster(head: Head, image_uri: str | None) -> str:
    """sbatch's version there; SpecError (exit 2) when the job cannot be submitted."""
    found = slurm.version(head)
    if image_uri and not slurm.has_pyxis(head):
        raise refusal("pyxis", image_uri)
    return found


def job_files(value: SlurmSubmission) -> dict[str, Content]:
    """The job folder's files: the code (the same list SageMaker gets), the node step, the
    script."""
    folder = value.folder
    files: dict[str, Content] = {
        f"code/{arcname}": source for source, arcname in packaging.bundle(value.plan)
    }
    files[folder.node_program.name] = Path(node_start.__file__)
    files[folder.script.name] = value.script.encode()
    return files


def send(value: SlurmSubmission, options: HyperPodSlurmOptions) -> SlurmJob:
    """Write the job folder, submit the script; the job, not waiting for it."""
    head = Head(value.head_node)
    image = value.plan.spec.code.image_uri
    check_cluster(head, image)
    folder = value.folder
    if head.read_bytes(folder.script) is not None:
        raise SpecError(
            [Problem("job_name", "has a job folder already", value.name, "a new job name")]
        )
    head.make_folders(folder.made_first())
    head.write_files(folder.path, job_files(value))
    slurm_job_id = slurm.submit(head, folder.script)
    record = {
        "name": value.name,
        "backend": "hyperpod-slurm",
        "slurm_job_id": slurm_job_id,
        "head_node": value.head_node,
        "job_root": str(folder.root),
        "job_folder": str(folder.path),
        "checkpoint_dir": str(folder.checkpoints),
        "nodes": len(value.plan.launch.hosts),
        "processes_per_node": value.plan.launch.processes_per_host,
        "instance_type": value.plan.launch.instance_type,
        "grace": options.grace,
        "poll_seconds": options.poll_seconds,
        "submitted": round(time.time(), 3),
    }
    write_record(options.root, record)
    return SlurmJob(record, value.plan, value.notes)
