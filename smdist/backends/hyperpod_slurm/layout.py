"""A job's folder on the cluster's shared file system: what every node reads and writes.

``<job-root>/<job>/``:

- ``code/``: the job's code, the same file list SageMaker gets (``smdist.packaging``);
- ``smdist_node.py``: the step every node runs first (``node_start``), and ``node.json``, its
  settings, written by the batch script;
- ``job.sbatch``: the script that was submitted, as the dry run showed it;
- ``logs/<job>_<slurm job id>.out``: the job's output (sbatch's ``%x_%j``), every node's lines
  labelled with its task number;
- ``model/`` (SM_MODEL_DIR of every node) and ``checkpoints/`` (unless another shared folder
  is given);
- ``hosts/<node>/``: the node's stand-in for ``/opt/ml``: its config files and ``output/``
  (SM_OUTPUT_DIR), and links to the shared ``model``, ``checkpoints`` and channel folders;
- ``exit_code`` (the batch step's, once it ends) and ``stop-requested`` (``smdist stop``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

NODE_PROGRAM = "smdist_node.py"
NODE_SETTINGS = "node.json"
SCRIPT = "job.sbatch"
EXIT_CODE = "exit_code"
STOP_REQUESTED = "stop-requested"


@dataclass(frozen=True)
class JobFolder:
    """The folder of job ``name`` under ``root`` (absolute paths on the cluster)."""

    root: PurePosixPath
    name: str
    checkpoints_given: PurePosixPath | None = None

    @property
    def path(self) -> PurePosixPath:
        return self.root / self.name

    @property
    def code(self) -> PurePosixPath:
        return self.path / "code"

    @property
    def logs(self) -> PurePosixPath:
        return self.path / "logs"

    @property
    def model(self) -> PurePosixPath:
        return self.path / "model"

    @property
    def checkpoints(self) -> PurePosixPath:
        return self.checkpoints_given or self.path / "checkpoints"

    @property
    def hosts(self) -> PurePosixPath:
        return self.path / "hosts"

    @property
    def script(self) -> PurePosixPath:
        return self.path / SCRIPT

    @property
    def node_program(self) -> PurePosixPath:
        return self.path / NODE_PROGRAM

    @property
    def node_settings(self) -> PurePosixPath:
        return self.path / NODE_SETTINGS

    @property
    def exit_code(self) -> PurePosixPath:
        return self.path / EXIT_CODE

    @property
    def stop_requested(self) -> PurePosixPath:
        return self.path / STOP_REQUESTED

    @property
    def output_pattern(self) -> PurePosixPath:
        """sbatch's ``--output``: the job's name and Slurm id (``%x_%j``)."""
        return self.logs / "%x_%j.out"

    def log(self, slurm_job_id: int) -> PurePosixPath:
        return self.logs / f"{self.name}_{slurm_job_id}.out"

    def made_first(self) -> list[PurePosixPath]:
        """The folders made before the job is submitted."""
        folders = [self.path, self.code, self.logs, self.model, self.hosts]
        return [*folders, self.checkpoints]
