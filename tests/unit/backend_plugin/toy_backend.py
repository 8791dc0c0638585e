"""A backend written the way a new one is added: a Backend subclass in a module of its own,
named by one line of the registry. It "runs" a job by writing what it was sent to a folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from smdist.backends.base import Backend, JobStatus
from smdist.backends.options import BackendOptions
from smdist.backends.views import JobView


class ToyOptions(BackendOptions):
    spool: Annotated[Path, Field(description="where the toy cluster keeps its jobs")] = Path(
        "spool"
    )
    lane: Annotated[str, Field(description="the toy cluster's lane")] = "default"


class ToyJob:
    backend = "toy"

    def __init__(self, folder: Path) -> None:
        self.folder, self.name, self.plan = folder, folder.name, None

    @property
    def status(self) -> JobStatus:
        return JobStatus(json.loads((self.folder / "job.json").read_text())["status"])

    def wait(self, timeout=None, logs=False, raise_on_failure=False) -> JobStatus:
        return self.status

    def logs(self, follow: bool = False) -> Iterator[str]:
        yield f"toy | {self.name} ran"


class ToyView(JobView):
    def __init__(self, job: ToyJob) -> None:
        self.job, self.name = job, job.name

    def status_lines(self) -> list[str]:
        return [f"{self.name}\t{self.job.status}\ttoy"]

    def status_document(self) -> dict[str, Any]:
        return json.loads((self.job.folder / "job.json").read_text())

    @property
    def exit_code(self) -> int:
        return self.job.status.exit_code

    def logs(self, follow: bool) -> Iterator[str]:
        return self.job.logs(follow)

    def stop(self, say, *, wait, poll, report_end) -> None:
        say(f"{self.name}: already {self.job.status}; nothing to stop")


class ToyBackend(Backend):
    name = "toy"
    summary = "a toy cluster that records what it is sent"
    Options = ToyOptions

    def dry_run(self, plan, options: ToyOptions) -> dict[str, Any]:
        return {"lane": options.lane, "hosts": list(plan.launch.hosts)}

    def show(self, plan, value: dict[str, Any]) -> tuple[str, list[str]]:
        return json.dumps(value, sort_keys=True), [f"note: the toy lane is {value['lane']}"]

    def send(self, value: dict[str, Any], options: ToyOptions) -> ToyJob:
        folder = options.spool / "toy-job-1"
        folder.mkdir(parents=True)
        (folder / "job.json").write_text(json.dumps({**value, "status": "Completed"}))
        return ToyJob(folder)

    def attach(self, name: str, options: ToyOptions) -> ToyView | None:
        folder = options.spool / name
        return ToyView(ToyJob(folder)) if (folder / "job.json").is_file() else None
