"""One local-mode job on disk: ``<job dir>/run.json`` (what its supervising process runs) and
``job.json`` (what ``status`` reads).

``launch`` checks the machine, stages the code and writes this file; the supervisor (its own
process, so the job outlives a ``smdist submit`` that does not wait) runs the plan ``launch``
showed, read back from it (``Plan.from_record``), never planning again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from smdist.backends.safe_files import write_text_atomically

RUN_FILE = "run.json"
RECORD = "job.json"  # what status, logs and stop read: see smdist.backends.recorded


@dataclass(frozen=True)
class LocalRun:
    name: str
    sdk: str  # "2" or "3": the SDK line that runs it
    spec: dict[str, Any]  # the job spec, as JobSpec.from_dict reads it
    spec_source: str
    plan: dict[str, Any]  # Plan.to_record() at launch
    instance_type: str  # local or local_gpu
    region: str
    bucket: str | None
    role: str
    work_dir: str  # temporary: staged code and the SDK's container root; removed at the end
    output_dir: str  # kept: model.tar.gz and output.tar.gz
    container_config: dict[str, Any] = field(default_factory=dict)
    sdk_local_config: dict[str, Any] = field(default_factory=dict)  # ~/.sagemaker local:
    pass_aws_credentials: bool = False
    grace: float = 30.0

    @property
    def code_dir(self) -> Path:
        return Path(self.work_dir) / "code"

    @property
    def container_root(self) -> Path:
        return Path(self.work_dir) / "containers"

    def write(self, job_dir: Path) -> None:
        # Private from its first byte (the new file is the writer's alone: mode 0600).
        write_text_atomically(Path(job_dir) / RUN_FILE, json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def read(cls, job_dir: Path) -> LocalRun:
        return cls(**json.loads((Path(job_dir) / RUN_FILE).read_text()))


def write_record(job_dir: Path, record: dict[str, Any]) -> None:
    """``job.json``, replaced whole: a reader never sees half a record."""
    write_text_atomically(Path(job_dir) / RECORD, json.dumps(record, indent=1) + "\n")
