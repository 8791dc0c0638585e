"""SageMaker HyperPod's Slurm clusters on the backend interface: a job is an sbatch script.

``dry_run`` is the script (``submission.build``), with the job's folder on the shared file
system and the plan it runs; ``send`` writes that folder and submits that script
(``sending``); ``attach`` finds a job this machine submitted by its record under ``--root``
and reads its state from Slurm and its folder (``view``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.backends.base import Backend
from smdist.backends.hyperpod_slurm.options import HyperPodSlurmOptions
from smdist.errors import NO_SUCH_JOB, Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.hyperpod_slurm.job import SlurmJob
    from smdist.backends.hyperpod_slurm.submission import SlurmSubmission
    from smdist.planning.plan import Plan


class HyperPodSlurmBackend(Backend):
    name = "hyperpod-slurm"
    summary = "an sbatch job on a SageMaker HyperPod Slurm cluster (here, or via --head-node)"
    Options = HyperPodSlurmOptions
    finds_jobs_here = True  # by the record under --root; the job's state comes from Slurm
    title = "HyperPod Slurm"
    file_inputs_here = False  # file:///fsx/... is the cluster's shared file system

    def submission_problems(self, plan: Plan) -> list[Problem]:
        # lazy: this backend's checks, for a job sent to it
        from smdist.backends.hyperpod_slurm.checks import refusals

        return refusals(plan)

    def dry_run(self, plan: Plan, options: HyperPodSlurmOptions) -> SlurmSubmission:
        # lazy: the script's rendering and the cluster's checks, for a job sent here
        from smdist.backends.hyperpod_slurm import sending
        from smdist.backends.hyperpod_slurm.submission import build

        value = build(plan, options)
        image = plan.spec.code.image_uri
        for missing in sending.here_problems(image, options.head_node):
            raise sending.refusal(missing, image)
        return value

    def show(self, plan: Plan, value: SlurmSubmission) -> tuple[str, list[str]]:
        where = value.head_node or "this machine"
        lines = [
            f"job folder: {value.folder.path} (code, logs, model, checkpoints at "
            f"{value.folder.checkpoints}); submitted with sbatch on {where}",
            *value.notes,
        ]
        return value.script.rstrip("\n"), lines

    def send(self, value: SlurmSubmission, options: HyperPodSlurmOptions) -> SlurmJob:
        # lazy: the job folder's writing and sbatch, when a job is submitted
        from smdist.backends.hyperpod_slurm.sending import send

        return send(value, options)

    def launched(self, job: Any) -> list[str]:
        return [
            *job.notes,
            f"{job.name}: Slurm job {job.slurm_job_id} on {job.head.where}, folder "
            f"{job.folder.path}; follow it with `smdist logs -f {job.name}`, stop it with "
            f"`smdist stop {job.name}`",
        ]

    def attach(self, name: str, options: HyperPodSlurmOptions) -> Any:
        # lazy: the job's view, for status, logs and stop
        from smdist.backends.hyperpod_slurm.view import find

        return find(name, Path(options.root))

    def known_names(self, options: HyperPodSlurmOptions) -> list[str]:
        # lazy: the records, for a lookup
        from smdist.backends.hyperpod_slurm.records import names

        return names(Path(options.root))

    def not_found(self, name: str, options: HyperPodSlurmOptions) -> SpecError:
        # lazy: the records, for a lookup
        from smdist.backends.hyperpod_slurm.records import record_path

        where = record_path(Path(options.root), name)
        problem = Problem(
            "job_name",
            f"is no hyperpod-slurm job submitted from here: there is no {where}",
            name,
            "the name `smdist submit --backend hyperpod-slurm` printed (with its --root)",
        )
        return SpecError([problem], NO_SUCH_JOB)

    def list(self, options: HyperPodSlurmOptions) -> list[Any]:
        # lazy: the rows, for `smdist jobs` only
        from smdist.backends.hyperpod_slurm.view import rows

        return rows(Path(options.root))
