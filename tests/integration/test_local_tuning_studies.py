"""A local study keeps to itself: one search at a time in its folder, the search space it began
with, its own trials' checkpoints, and a trial's reason when its job gave no objective.

Every search here is a real ``smdist tune --local`` (or ``tune_locally``) of small plain jobs;
no check ever accepts smdist's internal-error exit (70).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from local_jobs import LEFTOVER_MARKER, PYTHON, assert_nothing_left, clean_environ, finish
from test_local_tuning import PLAIN, PLAIN_SCRIPT, job_record, snapshot, write_job

pytestmark = pytest.mark.integration


def smdist_tune(job: Path, root: Path, *args: str, start_only: bool = False, timeout: float = 180):
    """``smdist tune JOB --local --root ROOT ARGS`` in a clean environment: its Run (exit code
    and output), or, with ``start_only``, the running process and its log."""
    log = root.parent / f"smdist-tune-{time.monotonic_ns()}.log"
    command = [PYTHON, "-m", "smdist.cli.app", "tune", str(job), "--local", "--root", str(root)]
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [*command, *args],
            cwd=root.parent,
            env=clean_environ({LEFTOVER_MARKER: str(root.parent)}),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    if start_only:
        return process, log
    return finish(process, log, root, timeout)


# ---- a metric that no line matched --------------------------------------------------------------
def test_a_trial_whose_log_never_matched_the_metric_regex_says_so(tmp_path):
    tuning = {
        "objective": {"metric": "val:acc", "type": "Maximize"},
        "parameters": {"level": {"type": "continuous", "min": 0.0, "max": 1.0}},
        "strategy": "Random", "max_jobs": 1, "random_seed": 1,
    }  # fmt: skip
    metrics = {"metric_definitions": [{"name": "val:acc", "regex": "val_acc=([0-9.]+)"}]}
    job = write_job(tmp_path, PLAIN_SCRIPT, tuning, strategy=PLAIN, extra=metrics)
    root = tmp_path / ".smdist"
    run = smdist_tune(job, root, "--hosts", "1")
    assert run.returncode == 1, run.output
    said = " ".join(run.output.split())
    expected = "no line of its log matched the regex of the objective metric val:acc"
    assert f"{expected} ('val_acc=([0-9.]+)')" in said, run.output
    (trial,) = snapshot(root)["trials"]
    assert trial["status"] == "Failed" and expected in trial["reason"]
    assert "[metrics] epoch=2 loss=" in trial["reason"]  # the last line the job printed
    assert job_record(root, trial["name"])["status"] == "Completed"
    assert "loss=" in (root / "jobs" / trial["name"] / "logs" / "job.log").read_text()
    assert_nothing_left(tmp_path)
