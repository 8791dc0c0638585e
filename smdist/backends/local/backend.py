"""The local backend on the backend interface: ``smdist run``'s and ``smdist.fit``'s default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from smdist.backends.base import Backend
from smdist.backends.local.options import LocalOptions, LocalTuneOptions
from smdist.backends.recorded import RecordedHere

if TYPE_CHECKING:
    from smdist.backends.local.job import LocalJob
    from smdist.planning.plan import Plan


@dataclass(frozen=True)
class LocalLaunch:
    """What a local run starts from: the plan and the options, nothing derived again."""

    plan: Plan
    options: LocalOptions

    def to_dict(self) -> dict[str, Any]:
        shown = {k: v for k, v in self.options.given().items() if k != "console"}
        return {"plan": self.plan.to_dict(), "options": {k: str(v) for k, v in shown.items()}}


class LocalBackend(RecordedHere, Backend):
    name = "local"
    summary = "emulated SageMaker hosts on this machine, no Docker"
    Options = LocalOptions
    TuneOptions = LocalTuneOptions
    command: ClassVar[str] = "run"
    finds_studies = True  # smdist tune --local's searches

    def dry_run(self, plan: Plan, options: LocalOptions) -> LocalLaunch:
        return LocalLaunch(plan, options)

    def send(self, value: LocalLaunch, options: LocalOptions) -> LocalJob:
        # lazy: the emulator, when a job starts
        from smdist.backends.local.starting import start

        return start(value.plan, value.options)

    def where(self, record: dict[str, Any], job_dir: Any) -> str:
        hosts = record.get("hosts") or []
        return f"local: {len(hosts)} host(s) x {record.get('processes_per_host')} in {job_dir}"

    def tune_notes(self, plan: Plan) -> list[str]:
        # lazy: the search's notes, for a search only
        from smdist.backends.local.tuning import local_notes

        return local_notes(plan.spec.tuning)

    def tune(
        self, plan: Plan, options: LocalTuneOptions, progress: Any = None, wait: bool = True
    ) -> Any:
        """Run every trial here, to the end of the search (``wait`` changes nothing)."""
        # lazy: the search and Optuna, for a local search only
        from smdist.backends.local.tuning import tune_here

        return tune_here(plan, options, progress)
