"""One trial: the job with the trial's values, run as any local job runs, and read as it runs.

The trial's job is the search's plan bound to the trial (``Plan.for_trial``), as SageMaker's
tuner makes a trial from the tuning job's definition: the tuned values added to the
hyperparameters, the ``tuning`` section left out (a trial is a plain job) and the name
``<search>-<trial number>`` (``<search>-s<n>-<trial number>`` in the study begun by the n-th
``--fresh``): the job's directory, ``smdist logs <name>`` and its own checkpoint store all
follow from that name, so no trial meets an earlier study's. Nothing is planned again: the
ranges were checked with the plan.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import optuna
from optuna.trial import TrialState

from smdist.backends.base import JobStatus
from smdist.backends.local import LocalJob
from smdist.backends.local.starting import launch as local_launch
from smdist.backends.local.tuning import store
from smdist.backends.local.tuning.objective import ObjectiveReader, no_value_reason
from smdist.backends.local.tuning.space import suggest
from smdist.planning.plan import Plan
from smdist.spec.tuning import Tuning


@dataclass
class LogTail:
    """The new complete lines of a growing file, each time it is asked."""

    path: Path
    _handle: IO[str] | None = None
    _partial: str = ""
    _read_to_end: bool = False

    def new_lines(self, final: bool = False) -> list[str]:
        """The lines added since the last call; ``final``: the file is complete (the last line
        may lack its newline), and later calls return nothing."""
        if self._read_to_end:
            return []
        if self._handle is None:
            if not self.path.exists():
                return []
            self._handle = open(self.path, encoding="utf-8", errors="replace")  # noqa: SIM115
        text = self._partial + self._handle.read()
        *lines, self._partial = text.split("\n")
        if final:
            lines += [self._partial] if self._partial else []
            self._partial = ""
            self._handle.close()
            self._read_to_end = True
        return lines


@dataclass
class TrialJob:
    """A started trial: its Optuna trial, its local job, and what its log said so far."""

    trial: optuna.Trial
    metric: str  # the objective's metric name
    values: dict[str, Any]
    job: LocalJob
    reader: ObjectiveReader
    tail: LogTail
    pruned: bool = False
    stopping: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def number(self) -> int:
        return self.trial.number

    @property
    def finished(self) -> bool:
        return self.job.status.finished

    def poll(self) -> None:
        """Read the new lines; report each new value; stop the job if the pruner says so."""
        final = self.finished
        for line in self.tail.new_lines(final=final):
            report = self.reader.feed_log_line(line)
            if report is None or self.pruned or self.stopping:
                continue
            self.trial.report(report.value, report.step)
            if self.trial.should_prune():
                self.pruned = True
                self.job.stop()

    def stop(self, kill: bool = False) -> None:
        self.stopping = True
        if kill:
            self.job.kill()
        else:
            self.job.stop()

    def end(self, study: optuna.Study) -> None:
        """Tell the study how the finished job ended (call once ``finished``); a trial that
        failed with a job that completed says why (its ``reason``)."""
        self.poll()
        attrs = {store.OBJECTIVE: self.reader.last, store.MODEL: self.job.model_artifacts}
        for key, value in attrs.items():
            self.trial.set_user_attr(key, value)
        status = self.job.status
        objective = self.reader.last
        if self.pruned:
            self._tell(study, TrialState.PRUNED, "Pruned")
        elif status is JobStatus.COMPLETED and objective is not None and not math.isnan(objective):
            study.tell(self.trial, objective)  # SageMaker's objective: the metric's last value
        else:  # failed, stopped, or never reported the objective (or reported nan)
            if status is JobStatus.COMPLETED:
                reason = no_value_reason(self.metric, self.reader)
            else:
                reason = self.job.failure_reason
            if reason:
                self.trial.set_user_attr(store.REASON, reason)
            self._tell(
                study, TrialState.FAIL, "Stopped" if status is JobStatus.STOPPED else "Failed"
            )

    def _tell(self, study: optuna.Study, state: TrialState, status: str) -> None:
        self.trial.set_user_attr(store.STATUS, status)
        study.tell(self.trial, state=state)


def start_trial(
    study: optuna.Study,
    plan: Plan,
    tuning: Tuning,
    trial_prefix: str,
    regex: re.Pattern[str],
    launch_options: dict[str, Any],
) -> TrialJob:
    """Ask the study for the next values and start their job: the search's plan bound to them
    (``Plan.for_trial``: the ranges were checked with the plan, nothing is planned again)."""
    trial = study.ask()
    values = suggest(trial, tuning)
    name = f"{trial_prefix}-{trial.number}"
    trial.set_user_attr(store.JOB_NAME, name)
    trial.set_user_attr(store.VALUES, values)
    try:
        job = local_launch(plan.for_trial(name, values), job_name=name, **launch_options)
    except BaseException:
        # This machine (not the values) kept it from starting, or Ctrl-C came during setup:
        # the trial runs again when the search resumes.
        store.end_interrupted(study, trial.number, trial.params)
        raise
    trial.set_user_attr(store.JOB_NAME, job.name)
    assert job.log is not None
    reader = ObjectiveReader(regex)
    return TrialJob(trial, tuning.objective.metric, values, job, reader, LogTail(job.log.path))
