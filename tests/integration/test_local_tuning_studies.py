"""A local study keeps to itself: one search at a time in its folder, the search space it began
with, its own trials' checkpoints, and a trial's reason when its job gave no objective.

Every search here is a real ``smdist tune --local`` (or ``tune_locally``) of small plain jobs;
no check ever accepts smdist's internal-error exit (70).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from local_jobs import LEFTOVER_MARKER, PYTHON, assert_nothing_left, clean_environ, finish
from test_local_tuning import PLAIN, PLAIN_SCRIPT, job_record, snapshot, wait_for_trials, write_job

from smdist.backends.local.tuning import tune_locally
from smdist.checks.reading import load
from smdist.planning.plan import plan

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


# ---- checkpoints: a fresh study never restores an earlier study's ------------------------------
# A script that keeps its state as a checkpoint and resumes from one it finds, saying whose.
CHECKPOINTED_SCRIPT = """
    import argparse
    import os
    from pathlib import Path

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--model_dir")  # the TensorFlow toolkit passes it
    args = parser.parse_args()
    kept = Path(os.environ["SM_MODEL_DIR"]).parent / "checkpoints" / "state.txt"
    start = 0
    if kept.exists():
        job, batch_size, epoch = kept.read_text().split()
        print(f"resumed from {job} (batch_size={batch_size}): epoch {epoch} of {args.epochs}")
        start = int(epoch)
    for epoch in range(start, args.epochs):
        print(f"[metrics] epoch={epoch} loss={1.0 / args.batch_size + 1.0 / (epoch + 1):.4f}")
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(f"{os.environ['TRAINING_JOB_NAME']} {args.batch_size} {args.epochs}")
"""


def test_a_resumed_fresh_study_never_restores_the_checkpoints_of_the_study_it_set_aside(tmp_path):
    def job(max_jobs: int) -> Path:
        tuning = {
            "parameters": {"batch_size": {"type": "categorical", "values": [16, 32, 64, 128]}},
            "strategy": "Random", "max_jobs": max_jobs, "random_seed": 4,
        }  # fmt: skip
        checkpoint = {"checkpoint": {"s3_uri": "s3://bucket/checkpoints/search"}}
        return write_job(tmp_path, CHECKPOINTED_SCRIPT, tuning, strategy=PLAIN, extra=checkpoint)

    root = tmp_path / ".smdist"
    earlier = tune_locally(plan(load(job(2))), root=root, hosts=1)
    assert [t.status for t in earlier.trials] == ["Completed"] * 2, earlier.rows()
    # --fresh, cut short after one trial (a smaller budget), then resumed with the full one
    tune_locally(plan(load(job(1))), root=root, hosts=1, fresh=True)
    resumed = tune_locally(plan(load(job(2))), root=root, hosts=1)
    assert [t.status for t in resumed.trials] == ["Completed"] * 2, resumed.rows()
    for trial in resumed.trials:
        log = (root / "jobs" / trial.name / "logs" / "job.log").read_text()
        assert "resumed from" not in log, log
    # the earlier study's trials are kept: their jobs, logs and checkpoints
    kept = {path.read_text().split()[0] for path in (root / "checkpoints").rglob("state.txt")}
    for trial in earlier.trials:
        assert trial.name in kept, sorted(kept)
        assert job_record(root, trial.name)["status"] == "Completed"
        assert "[metrics] epoch=1" in (root / "jobs" / trial.name / "logs" / "job.log").read_text()
    assert not {t.name for t in resumed.trials} & {t.name for t in earlier.trials}
    assert_nothing_left(tmp_path)


# ---- one search at a time in a folder ----------------------------------------------------------
def test_a_second_search_of_a_running_study_is_refused_and_the_first_completes(tmp_path):
    tuning = {
        "parameters": {"level": {"type": "categorical", "values": [1, 2]}},
        "strategy": "Grid", "random_seed": 1,
    }  # fmt: skip
    # The first search's second trial runs until the gate opens: however slow the refused
    # searches are to start, the first is still running when they try.
    gate = tmp_path / "gate"
    job = write_job(tmp_path, PLAIN_SCRIPT, tuning, strategy=PLAIN,
                    hyperparameters={"gate": str(gate)})  # fmt: skip
    root = tmp_path / ".smdist"
    first, first_log = smdist_tune(job, root, start_only=True)
    try:
        wait_for_trials(first, root, first_log, completed=1)
        for args in ((), ("--fresh",)):
            second = smdist_tune(job, root, *args, timeout=60)
            assert second.returncode == 2, second.output
            said = " ".join(second.output.split())
            assert f"study search is already running in this folder (pid {first.pid})" in said
            assert f"kill {first.pid}" in said and "internal error" not in said
        gate.touch()
        assert first.wait(timeout=120) == 0, first_log.read_text()
    finally:
        if first.poll() is None:
            first.kill()
    final = snapshot(root)
    assert [t["status"] for t in final["trials"]] == ["Completed"] * 2, final
    assert not list((root / "tuning" / "search").glob("study.journal.before-*"))  # not set aside
    assert_nothing_left(tmp_path)


HOLD_THE_STUDY = """
import sys, time
from pathlib import Path
from smdist.backends.local.tuning.lock import study_lock
with study_lock(Path(sys.argv[1]), "search"):
    print("held", flush=True)
    time.sleep(120)
"""


def test_the_lock_of_a_search_killed_with_sigkill_is_free_at_once(tmp_path):
    from smdist.backends.local.tuning.lock import StudyInUse, study_lock
    from smdist.exit_codes import exit_code_for

    directory = tmp_path / "tuning" / "search"
    holder = subprocess.Popen(
        [PYTHON, "-c", HOLD_THE_STUDY, str(directory)],
        env=clean_environ(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(StudyInUse, match=f"pid {holder.pid}") as refused:
            with study_lock(directory, "search"):
                pass
        assert exit_code_for(refused.value) == 2
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with study_lock(directory, "search"):  # no stale lock is left
        pass


# ---- a study keeps the search space it began with ----------------------------------------------
def space(kind: list[str], level_max: float, max_jobs: int = 3) -> dict[str, Any]:
    return {
        "parameters": {
            "level": {"type": "continuous", "min": 0.0, "max": level_max},
            "kind": {"type": "categorical", "values": kind},
        },
        "strategy": "Random", "max_jobs": max_jobs, "random_seed": 2,
    }  # fmt: skip


def test_a_study_refuses_to_resume_with_another_search_space_and_says_what_changed(tmp_path):
    root = tmp_path / ".smdist"
    began = space(["good", "fine"], 1.0, max_jobs=2)
    job = write_job(tmp_path, PLAIN_SCRIPT, began, strategy=PLAIN)
    first = tune_locally(plan(load(job)), root=root, hosts=1)
    assert [t.status for t in first.trials] == ["Completed"] * 2
    kept = snapshot(root)

    write_job(tmp_path, PLAIN_SCRIPT, space(["good", "fine", "other"], 1.0), strategy=PLAIN)
    changed = smdist_tune(job, root, "--hosts", "1")
    assert changed.returncode == 2, changed.output
    said = " ".join(changed.output.split())
    assert "tuning.parameters.kind: values ['good', 'fine'] when study search began, now " in said
    assert "['good', 'fine', 'other']" in said and "--fresh" in said and "tuning.name" in said
    assert "internal error" not in said

    # max_jobs is no part of the space: 1 keeps the fresh search below short
    write_job(tmp_path, PLAIN_SCRIPT, space(["good", "fine"], 4.0, max_jobs=1), strategy=PLAIN)
    widened = smdist_tune(job, root, "--hosts", "1")
    assert widened.returncode == 2, widened.output
    said = " ".join(widened.output.split())
    assert "tuning.parameters.level: continuous 0.0..1.0 when study search began, now " in said
    assert "continuous 0.0..4.0" in said and "kind" not in said.split("tuning.parameters")[-1]
    assert snapshot(root) == kept  # the study is untouched: nothing ran, nothing was re-queued

    fresh = smdist_tune(job, root, "--hosts", "1", "--fresh")
    assert fresh.returncode == 0, fresh.output
    assert (root / "tuning" / "search" / "study.journal.before-1").is_file()
    for trial in first.trials:  # the earlier study's jobs are kept
        assert job_record(root, trial.name)["status"] == "Completed"
    assert_nothing_left(tmp_path)


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
