"""``tune_locally``: a hyperparameter search whose every trial is a real local job.

The scripts are written as users write them (strict argparse, ``[metrics]`` lines on stdout),
the objective is read with the metric definitions SageMaker would use, and every test checks
that no process of the search outlives it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import PYTHON, assert_nothing_left, clean_environ

from smdist.backends.local.tuning import tune_locally
from smdist.checks.reading import load
from smdist.planning.plan import plan

pytestmark = pytest.mark.integration

# A plain script (no framework import) whose loss is known: best at a learning rate of 0.01
# (log10 = -2), a parabola in log10(lr) with seeded noise, the same for every trial.
PARABOLA_SCRIPT = """
    import argparse
    import math
    import random

    parser = argparse.ArgumentParser()
    parser.add_argument("--learning_rate", type=float, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--model_dir")  # the TensorFlow toolkit passes it
    args = parser.parse_args()
    noise = random.Random(100)
    distance = math.log10(args.learning_rate) + 2
    for epoch in range(args.epochs):
        loss = distance**2 + 0.5 / (epoch + 1) + 0.01 * noise.gauss(0.0, 1.0)
        print(f"[metrics] epoch={epoch} loss={loss:.6f}", flush=True)
"""

# A plain script (no framework import) reporting ``level`` as its loss each epoch; "bad" values
# fail. A level of 5 or more is a lagging trial, and slow (``--lag`` seconds an epoch, or ``--nap``
# x 10), so that only a stop ends it early. With ``--gate``, every trial but a study's first
# waits until that file exists (each of its processes says so in ``<gate>.waiting``): a test
# holds a search with one trial done and one running for as long as it needs, then lets it go,
# rather than sleeping a guess.
PLAIN_SCRIPT = """
    import argparse
    import os
    import sys
    import time

    parser = argparse.ArgumentParser()
    parser.add_argument("--level", type=float, default=1.0)
    parser.add_argument("--kind", default="good")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--nap", type=float, default=0.0)
    parser.add_argument("--lag", type=float, default=0.0)
    parser.add_argument("--gate")
    parser.add_argument("--model_dir")  # the TensorFlow toolkit passes it
    args = parser.parse_args()
    if args.kind == "bad":
        sys.exit("this kind never trains")
    if args.gate and not os.environ["TRAINING_JOB_NAME"].endswith("-0"):
        with open(args.gate + ".waiting", "a") as waiting:
            waiting.write("waiting\\n")
        while not os.path.exists(args.gate):
            time.sleep(0.05)
    for epoch in range(args.epochs):
        print(f"[metrics] epoch={epoch} loss={args.level + 1.0 / (epoch + 1):.4f}", flush=True)
        lagging = args.level >= 5
        time.sleep(args.nap * (10 if lagging else 1) + (args.lag if lagging else 0.0))
"""


def write_job(
    tmp_path: Path, script: str, tuning: dict[str, Any], *, strategy: dict[str, Any],
    hyperparameters: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
) -> Path:  # fmt: skip
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(textwrap.dedent(script))
    job = {
        "name": "search",
        "strategy": strategy,
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "code": {"source_dir": str(source), "entry_point": "train.py"},
        "hyperparameters": hyperparameters or {},
        "tuning": {"objective": {"metric": "train:loss", "type": "Minimize"}, **tuning},
        **(extra or {}),
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


PLAIN = {"kind": "mwms"}  # one plain process per host


def snapshot(root: Path) -> dict[str, Any]:
    return json.loads((root / "tuning" / "search" / "trials.json").read_text())


def job_record(root: Path, name: str) -> dict[str, Any]:
    return json.loads((root / "jobs" / name / "job.json").read_text())


# ---- Bayesian search -------------------------------------------------------------------------
def test_a_bayesian_search_finds_the_learning_rate_a_script_does_best_with(tmp_path):
    """10 trials, seeded TPE: the best learning rate within 0.3 decades of 0.01.

    Why these numbers pass reliably: the objective is a parabola in log10(lr) over 4 decades, and
    the search is deterministic for its seed (trials run one at a time; the noise is seeded).
    Run with this objective in memory, the same sampler found the optimum within 0.2 decades in
    10 trials for each of 40 seeds (0.3 is the margin); a 0.6-decade window is 15% of the range.
    The search is about the sampler, not the distribution: each trial is one plain process (no
    torch). That a search's every trial is a real distributed job, DDP over gloo with 2 ranks
    that agree on their weights, is test_tuning_notebook's test_fresh_run_has_the_stored_shape.
    """
    tuning = {
        "parameters": {
            "learning_rate": {"type": "continuous", "min": 1.0e-4, "max": 1.0,
                              "scaling": "Logarithmic"},
        },
        "strategy": "Bayesian", "max_jobs": 10, "random_seed": 7,
    }  # fmt: skip
    job = write_job(
        tmp_path, PARABOLA_SCRIPT, tuning, strategy=PLAIN, hyperparameters={"epochs": 2}
    )
    root = tmp_path / ".smdist"
    seen: list[tuple[int, str]] = []
    result = tune_locally(
        plan(load(job)),
        root=root,
        hosts=1,
        on_trial=lambda r: seen.extend((t.number, t.status) for t in r.trials),
    )
    assert result.status == "Completed" and len(result.trials) == 10
    assert [t.status for t in result.trials] == ["Completed"] * 10, result.rows()
    best = result.best
    assert best is not None
    import math

    assert abs(math.log10(best.values["learning_rate"]) + 2) < 0.3, result.rows()
    # each trial a local job of its own, named <search>-<n>, with its model and log
    assert [t.name for t in result.trials] == [f"search-{n}" for n in range(10)]
    assert job_record(root, best.name)["status"] == "Completed"
    assert best.model and best.model.endswith("output/model.tar.gz")
    assert "[metrics] epoch=1 loss=" in (root / "jobs" / best.name / "logs" / "job.log").read_text()
    assert (0, "Running") in seen and (0, "Completed") in seen  # on_trial: each start and end
    assert snapshot(root)["best"] == best.number
    assert_nothing_left(tmp_path)


# ---- early stopping ----------------------------------------------------------------------------
def test_early_stopping_prunes_a_lagging_trial_and_stops_its_job(tmp_path):
    # The median rule needs three finished trials; the seed orders the grid so that the lagging
    # level (9) comes fourth. Unstopped, its job would run 4 epochs x 30 s; the others do not wait.
    tuning = {
        "parameters": {"level": {"type": "categorical", "values": [1, 2, 3, 9]}},
        "strategy": "Grid", "random_seed": 5, "early_stopping": True,
    }  # fmt: skip
    hyperparameters = {"epochs": 4, "lag": 30}
    job = write_job(tmp_path, PLAIN_SCRIPT, tuning, strategy=PLAIN, hyperparameters=hyperparameters)
    root = tmp_path / ".smdist"
    began = time.monotonic()
    result = tune_locally(plan(load(job)), root=root, hosts=1)
    statuses = {t.values["level"]: t.status for t in result.trials}
    assert statuses == {1: "Completed", 2: "Completed", 3: "Completed", 9: "Pruned"}, result.rows()
    pruned = next(t for t in result.trials if t.status == "Pruned")
    assert pruned.objective == pytest.approx(10.0)  # the value it was stopped at
    assert job_record(root, pruned.name)["status"] == "Stopped"
    assert time.monotonic() - began < 60
    assert result.best is not None and result.best.values == {"level": 1}
    assert_nothing_left(tmp_path)


# ---- Grid, failures, parallel trials, Random and resumption ------------------------------------
def test_a_grid_search_runs_every_combination_once_and_goes_on_past_a_failed_trial(tmp_path):
    tuning = {
        "parameters": {
            "level": {"type": "categorical", "values": [1, 2.5]},
            "kind": {"type": "categorical", "values": ["good", "bad", "fine"]},
        },
        "strategy": "Grid", "max_parallel_jobs": 2,
    }  # fmt: skip
    job = write_job(tmp_path, PLAIN_SCRIPT, tuning, strategy=PLAIN)
    root = tmp_path / ".smdist"
    result = tune_locally(plan(load(job)), root=root, hosts=1, parallel=2)
    combinations = sorted((t.values["level"], t.values["kind"]) for t in result.trials)
    assert combinations == sorted((lv, k) for lv in (1, 2.5) for k in ("good", "bad", "fine"))
    assert {repr(t.values["level"]) for t in result.trials} == {"1", "2.5"}  # as written
    for trial in result.trials:
        failed = trial.values["kind"] == "bad"
        assert trial.status == ("Failed" if failed else "Completed"), result.rows()
        assert (trial.objective is None) == failed
    assert result.best is not None and result.best.values["level"] == 1
    assert result.best.objective == pytest.approx(1 + 1 / 3, abs=1e-3)  # the last epoch's value
    # a completed search run again runs nothing
    again = tune_locally(plan(load(job)), root=root, hosts=1)
    assert again.rows() == result.rows()
    assert len(list((root / "jobs").iterdir())) == 6
    assert_nothing_left(tmp_path)


def test_a_random_search_resumes_and_counts_the_trials_it_has(tmp_path):
    def tuning(max_jobs: int) -> dict[str, Any]:
        return {
            "parameters": {
                "level": {"type": "continuous", "min": 0.0, "max": 4.0},
                "epochs": {"type": "integer", "min": 1, "max": 3},
            },
            "strategy": "Random", "max_jobs": max_jobs, "random_seed": 3,
        }  # fmt: skip

    root = tmp_path / ".smdist"
    first = tune_locally(plan(load(write_job(tmp_path, PLAIN_SCRIPT, tuning(2), strategy=PLAIN))),
                         root=root, hosts=1)  # fmt: skip
    assert [t.status for t in first.trials] == ["Completed"] * 2
    assert all(isinstance(t.values["epochs"], int) and 0 <= t.values["level"] <= 4
               for t in first.trials)  # fmt: skip
    job = write_job(tmp_path, PLAIN_SCRIPT, tuning(4), strategy=PLAIN)
    second = tune_locally(plan(load(job)), root=root, hosts=1)
    assert len(second.trials) == 4 and second.rows()[:2] == first.rows()
    assert len(list((root / "jobs").iterdir())) == 4  # the first two did not run again
    values = [t.values for t in second.trials]
    assert values[2] not in values[:2] and values[3] not in values[:2]  # no value drawn again
    fresh = tune_locally(plan(load(job)), root=root, hosts=1, fresh=True)
    assert [t.values for t in fresh.trials][:2] == values[:2]  # the same seed, from the start
    assert (root / "tuning" / "search" / "study.journal.before-1").is_file()
    assert_nothing_left(tmp_path)


# ---- Ctrl-C and SIGTERM --------------------------------------------------------------------------
RUNNER = """
import sys
from pathlib import Path
from rich.console import Console
from smdist.checks.reading import load
from smdist.backends import registry
from smdist.cli.tuning_local import run
from smdist.planning.plan import plan
here = registry.get(registry.DEFAULT_BACKEND)
options = here.tune_options({"root": Path(sys.argv[2])})
sys.exit(run(plan(load(sys.argv[1])), here, options, console=Console(stderr=True)))
"""


def start_search(job: Path, root: Path, log: Path) -> subprocess.Popen:
    with open(log, "wb") as handle:
        return subprocess.Popen(
            [PYTHON, "-c", RUNNER, str(job), str(root)],
            cwd=job.parent,
            env=clean_environ(),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_for_trials(process: subprocess.Popen, root: Path, log: Path, completed: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            trials = snapshot(root)["trials"]
        except (OSError, ValueError):
            trials = []
        done = [t for t in trials if t["status"] == "Completed"]
        if len(done) >= completed and any(t["status"] == "Running" for t in trials):
            return
        time.sleep(0.2)
    raise AssertionError(f"no trial ran:\n{log.read_text()}")


def wait_at_gate(gate: Path, processes: int, log: Path) -> None:
    """Until ``processes`` processes wait at ``gate`` (``PLAIN_SCRIPT``): a trial's script runs,
    its hosts are no longer starting."""
    waiting = gate.with_name(gate.name + ".waiting")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if waiting.exists() and len(waiting.read_text().splitlines()) >= processes:
            return
        time.sleep(0.1)
    raise AssertionError(f"no trial waited at the gate:\n{log.read_text()}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_search_stops_its_trials_keeps_the_finished_ones_and_resumes(
    tmp_path, signum
):
    tuning = {
        "parameters": {"level": {"type": "categorical", "values": [1, 2, 3]}},
        "strategy": "Grid", "random_seed": 1,
    }  # fmt: skip
    gate = tmp_path / "gate"  # trial 0 completes, trial 1 runs until the test opens it
    job = write_job(tmp_path, PLAIN_SCRIPT, tuning, strategy=PLAIN,
                    hyperparameters={"gate": str(gate)})  # fmt: skip
    root = tmp_path / ".smdist"
    process = start_search(job, root, tmp_path / "first.log")
    wait_for_trials(process, root, tmp_path / "first.log", completed=1)
    wait_at_gate(gate, 2, tmp_path / "first.log")  # on both hosts
    process.send_signal(signum)
    assert process.wait(timeout=120) == 1, (tmp_path / "first.log").read_text()
    assert_nothing_left(tmp_path)
    kept = snapshot(root)
    assert kept["status"] == "Stopped"
    completed = {t["trial"]: t for t in kept["trials"] if t["status"] == "Completed"}
    stopped = [t for t in kept["trials"] if t["status"] == "Stopped"]
    assert completed and len(stopped) == 1, kept
    assert job_record(root, stopped[0]["name"])["status"] == "Stopped"
    if signum == signal.SIGTERM:
        return
    # Resumed: the completed trials are not run again, the stopped one is, and every
    # combination of the grid ends up completed once.
    gate.touch()
    process = start_search(job, root, tmp_path / "second.log")
    assert process.wait(timeout=180) == 0, (tmp_path / "second.log").read_text()
    final = snapshot(root)
    for number, trial in completed.items():
        assert final["trials"][number] == trial
    done = [t for t in final["trials"] if t["status"] == "Completed"]
    assert sorted(t["level"] for t in done) == [1, 2, 3]
    assert len(list((root / "jobs").iterdir())) == len(final["trials"])
    assert "best: trial" in (tmp_path / "second.log").read_text()
    assert_nothing_left(tmp_path)


# A script that notes when it ran, so that a test can see trials overlap. Trials meet in pairs,
# in the order they start: each waits (a minute at most) until its pair's other trial has
# started too, so that two trials run at the same time only if the search started them so.
TIMED_SCRIPT = """
    import argparse
    import time

    parser = argparse.ArgumentParser()
    parser.add_argument("--level", type=float, required=True)
    parser.add_argument("--times", required=True)
    parser.add_argument("--model_dir")  # the TensorFlow toolkit passes it
    args = parser.parse_args()
    start = time.time()
    starts = args.times + ".starts"
    with open(starts, "a") as handle:
        handle.write(f"{start}\\n")
    with open(starts) as handle:
        pair_end = (len(handle.readlines()) + 1) // 2 * 2
    while time.time() < start + 60:
        with open(starts) as handle:
            if len(handle.readlines()) >= pair_end:
                break
        time.sleep(0.05)
    print(f"[metrics] epoch=0 loss={args.level:.4f}", flush=True)
    with open(args.times, "a") as times:
        times.write(f"{start} {time.time()}\\n")
"""


def test_parallel_trials_run_at_the_same_time(tmp_path):
    times = tmp_path / "times.txt"
    tuning = {
        "parameters": {"level": {"type": "continuous", "min": 0.0, "max": 1.0}},
        "strategy": "Random", "max_jobs": 4, "max_parallel_jobs": 2, "random_seed": 3,
    }  # fmt: skip
    job = write_job(
        tmp_path, TIMED_SCRIPT, tuning, strategy=PLAIN, hyperparameters={"times": str(times)}
    )
    root = tmp_path / "root"
    result = tune_locally(plan(load(job)), root=root, hosts=1, parallel=2)
    assert [t.status for t in result.trials] == ["Completed"] * 4
    spans = sorted(tuple(map(float, line.split())) for line in times.read_text().splitlines())
    assert len(spans) == 4
    pairs = zip(spans, spans[1:], strict=False)
    overlapping = sum(1 for (_, end), (start, _) in pairs if start < end)
    assert overlapping >= 2, spans  # two at a time: each pair started together
    assert_nothing_left(root)
