"""The local search's loop: start trials up to the parallel limit, follow them, end them.

One thread does it all, polling each running trial's log (the local jobs supervise their own
processes): a pruner's verdict, a Ctrl-C or a SIGTERM is acted on within a poll, and nothing
but the jobs themselves runs concurrently with the study. A first Ctrl-C or SIGTERM stops every
running trial as a local job stops (SIGTERM, SIGKILL after its grace period); a second one kills
them at once.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from smdist.backends.local.preparation.layout import plan_layout
from smdist.backends.local.preparation.setup import job_region
from smdist.backends.local.tuning import store
from smdist.backends.local.tuning.trial_job import TrialJob, start_trial
from smdist.backends.tuning_results import TuningResult
from smdist.planning.plan import Plan
from smdist.spec.tuning import Tuning

POLL = 0.2  # seconds between looks at the running trials' logs
OnTrial = Callable[[TuningResult], None]


class Signals:
    """SIGINT and SIGTERM counted rather than raised while the search runs (main thread
    only), so that a signal never lands half-way through a write to the study."""

    def __init__(self) -> None:
        self.count = 0
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)


@dataclass
class Search:
    """One run of a search over ``study``, ``budget`` trials in all."""

    study: optuna.Study
    plan: Plan
    tuning: Tuning
    name: str
    trial_prefix: str  # the trials' names: <trial_prefix>-<number>
    directory: Path
    regex: re.Pattern[str]
    launch_options: dict[str, Any]
    parallel: int
    budget: int
    on_trial: OnTrial | None = None
    running: list[TrialJob] = field(default_factory=list)
    signals: Signals = field(default_factory=Signals)

    def run(self) -> TuningResult:
        """The search to its end, or until interrupted; returns what it found (status Stopped
        when interrupted: the finished trials are kept, the stopped ones run again next time)."""
        deadline = None
        if self.tuning.max_runtime is not None:
            deadline = time.monotonic() + self.tuning.max_runtime
        with self.signals:
            try:
                self.publish("InProgress")
                self._loop(deadline)
            except KeyboardInterrupt:
                self.signals.count = max(self.signals.count, 1)
            except Exception:
                if not self.signals.count:  # a setup step that the Ctrl-C itself broke
                    self._stop_all(interrupted=True)
                    raise
            finally:
                if self.running:  # a Ctrl-C, a SIGTERM, or an error: they run again next time
                    self._stop_all(interrupted=True)
        return self.publish("Stopped" if self.signals.count else "Completed")

    def _loop(self, deadline: float | None) -> None:
        while not self.signals.count:
            self._end_finished()
            if deadline is not None and time.monotonic() >= deadline:
                self._stop_all(interrupted=False)  # max_runtime: stopped trials count
                return
            while self._room() and not self.signals.count:
                self._start_one()
            if not self.running:
                return
            for trial in self.running:
                trial.poll()
            time.sleep(POLL)

    def _room(self) -> bool:
        started = store.counted(self.study) + len(self.running)
        return len(self.running) < self.parallel and started < self.budget

    def _start_one(self) -> None:
        trial = start_trial(
            self.study, self.plan, self.tuning, self.trial_prefix, self.regex, self.launch_options
        )
        self.running.append(trial)
        self.publish("InProgress")

    def _end_finished(self) -> None:
        for trial in [trial for trial in self.running if trial.finished]:
            trial.end(self.study)
            self.running.remove(trial)
            self.publish("InProgress")

    def _stop_all(self, *, interrupted: bool) -> None:
        """Stop every running trial and wait for its processes to end; a stopped trial is
        queued again when ``interrupted`` (it ended before its time, not by its values)."""
        for trial in self.running:
            if not trial.pruned:
                trial.stop()
        killed = self.signals.count >= 2
        while not all(trial.finished for trial in self.running):
            if self.signals.count >= 2 and not killed:
                for trial in self.running:
                    trial.stop(kill=True)
                killed = True
            time.sleep(POLL / 2)
        for trial in self.running:
            if interrupted and not trial.pruned:
                trial.poll()
                trial.trial.set_user_attr(store.OBJECTIVE, trial.reader.last)
                store.end_interrupted(self.study, trial.number, trial.trial.params)
            else:
                trial.end(self.study)
        self.running.clear()

    def publish(self, status: str) -> TuningResult:
        """The search as it stands: written to ``trials.json`` and handed to ``on_trial``."""
        numbers = {trial.number for trial in self.running}
        result = store.result_of(self.study, self.name, self.tuning, numbers, status)
        store.write_snapshot(self.directory, result)
        if self.on_trial is not None:
            self.on_trial(result)
        return result


def default_parallel(
    plan: Plan, tuning: Tuning, hosts: int | None, processes_per_host: int | None
) -> int:
    """``max_parallel_jobs``, capped by what this machine holds: one CPU per process."""
    layout = plan_layout(
        plan,
        job_name=plan.spec.name,
        region=job_region(plan),
        hosts=hosts,
        processes_per_host=processes_per_host,
    )
    fits = (os.cpu_count() or 1) // (layout.hosts * layout.processes_per_host)
    return max(1, min(tuning.max_parallel_jobs, fits))
