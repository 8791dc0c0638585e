"""Local names are answered here, never looked up on AWS first: ``status``/``logs``/``stop`` of a
local study, a mistyped local name, a name found nowhere with no AWS configured, and ``smdist
jobs`` listing what is under ``--root``. Every job and study here is a real ``smdist run`` or
``smdist tune --local`` of a small plain script.

The tests that only read a finished job and a finished study share one folder holding both
(``done``: made once, the module's tests kept on one xdist worker); a test that changes what
it reads changes a copy of it."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from local_jobs import (
    LEFTOVER_MARKER,
    PYTHON,
    assert_nothing_left,
    clean_environ,
    finish,
    smdist_run,
)
from test_local_tuning import PLAIN, PLAIN_SCRIPT, write_job

# The shared folder (``done``) is made once: every test of the module on one xdist worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cli_local_names")]

NO_AWS = {"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}
GRID = {"parameters": {"level": {"type": "categorical", "values": [1, 2]}}, "strategy": "Grid"}


def smdist(cwd: Path, *args: str, region: str | None = None) -> subprocess.CompletedProcess:
    """``smdist ARGS`` in ``cwd`` with no AWS configuration at all (a region only if given)."""
    environ = {k: v for k, v in clean_environ(NO_AWS).items() if k not in _AWS_SETTINGS}
    if region:
        environ["AWS_REGION"] = region
    return subprocess.run(
        [PYTHON, "-m", "smdist.cli.app", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


_AWS_SETTINGS = ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")  # fmt: skip


def tune(tmp_path: Path, *args: str, start_only: bool = False, **hyperparameters: object):
    values = {"epochs": 2, **hyperparameters}  # losses 2.0, 1.5 (level 1); 3.0, 2.5 (level 2)
    job = write_job(tmp_path, PLAIN_SCRIPT, GRID, strategy=PLAIN, hyperparameters=values)
    root = tmp_path / ".smdist"
    command = [PYTHON, "-m", "smdist.cli.app", "tune", str(job), "--local", "--root", str(root)]
    log = tmp_path / f"tune-{time.monotonic_ns()}.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [*command, *args],
            cwd=tmp_path,
            env=clean_environ({**NO_AWS, LEFTOVER_MARKER: str(tmp_path)}),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    if start_only:
        return process, log
    run = finish(process, log, root, timeout=180)
    assert run.returncode == 0, run.output
    return run


def hello_job(tmp_path: Path) -> Path:
    (tmp_path / "hello").mkdir()
    (tmp_path / "hello" / "train.py").write_text("print('hello')\n")
    job = tmp_path / "hello.yaml"
    job.write_text(
        textwrap.dedent(
            """
            name: hello
            strategy: {kind: mwms}
            cluster: {instance_type: ml.c5.xlarge, instance_count: 2}
            code: {source_dir: hello, entry_point: train.py}
            """
        )
    )
    return job


@dataclass(frozen=True)
class Done:
    """A folder whose ``.smdist`` holds a finished job, then a finished study (``search``)."""

    folder: Path
    hello: str  # the job's name


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Done:
    folder = tmp_path_factory.mktemp("done")
    run = smdist_run(hello_job(folder), folder)
    assert run.returncode == 0, run.output
    hello = run.job_dir().name  # before the study's trials join it under jobs/
    tune(folder)  # after the job: the job is the oldest
    assert_nothing_left(folder)
    return Done(folder, hello)


def copy_of(done: Done, tmp_path: Path) -> Path:
    """``done``'s folder copied into ``tmp_path``, for a test that changes what it reads."""
    shutil.copytree(done.folder / ".smdist", tmp_path / ".smdist", symlinks=True)
    return tmp_path


# ---- a local study by its name ----------------------------------------------------------------
def test_status_of_a_local_study_shows_its_trials_and_best_without_asking_aws(done):
    shown = smdist(done.folder, "status", "search")
    assert shown.returncode == 0, shown.stderr
    head, *rest = shown.stdout.splitlines()
    assert head.startswith("search\tCompleted\tlocal study: 2 of 2 trial(s) completed")
    assert any(
        line.startswith("best: trial ") and line.endswith("train:loss = 1.5") for line in rest
    )
    assert 'hyperparameters: {"level": 1}' in rest  # level 1 gives the lower loss
    document = json.loads(smdist(done.folder, "status", "search", "--json").stdout)
    best = next(trial for trial in document["trials"] if trial["trial"] == document["best"])
    assert document["status"] == "Completed" and best["level"] == 1


def test_logs_of_a_local_study_are_its_best_trials_or_the_one_asked_for(done):
    document = json.loads(smdist(done.folder, "status", "search", "--json").stdout)
    names = {trial["level"]: trial["name"] for trial in document["trials"]}
    best = smdist(done.folder, "logs", "search")
    assert best.returncode == 0, best.stderr
    assert f"({names[1]})" in best.stderr and best.stderr.startswith("search: logs of trial ")
    assert "loss=1.5000" in best.stdout and "loss=2.5000" not in best.stdout
    other = smdist(done.folder, "logs", "search", "--job", names[2])
    assert "loss=2.5000" in other.stdout and "loss=1.5000" not in other.stdout
    wrong = smdist(done.folder, "logs", "search", "--job", "search-7")
    assert wrong.returncode == 2
    assert "--job: is no trial of study search (got 'search-7'); valid: search-0, search-1" in (
        wrong.stderr
    )


def test_a_running_study_shows_in_progress_and_stop_ends_its_search(tmp_path):
    process, log = tune(tmp_path, start_only=True, epochs=40, nap=0.5)
    try:
        deadline = time.monotonic() + 120
        while "Running" not in _snapshot_text(tmp_path) and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.2)
        running = smdist(tmp_path, "status", "search")
        assert running.returncode == 0 and "search\tInProgress\tlocal study:" in running.stdout
        listed = smdist(tmp_path, "jobs").stdout
        assert any(line.split()[:2] == ["search", "study"] and "InProgress" in line
                   for line in listed.splitlines()), listed  # fmt: skip
        stopped = smdist(tmp_path, "stop", "search", "--wait")
        assert stopped.returncode == 0
        assert stopped.stderr.splitlines() == [
            f"search: stop requested (SIGTERM to its search, pid {process.pid})",
            "search: Stopped; `smdist tune FILE --local` resumes it",
        ]
        assert process.wait(timeout=120) == 1  # an interrupted search: resumable
    finally:
        if process.poll() is None:
            process.kill()
    assert "search\tStopped\t" in smdist(tmp_path, "status", "search").stdout
    assert_nothing_left(tmp_path)


def _snapshot_text(tmp_path: Path) -> str:
    try:
        return (tmp_path / ".smdist" / "tuning" / "search" / "trials.json").read_text()
    except OSError:
        return ""


def test_a_study_whose_search_was_killed_reads_as_stopped_with_how_to_resume(done, tmp_path):
    folder = copy_of(done, tmp_path)
    snapshot = folder / ".smdist" / "tuning" / "search" / "trials.json"
    document = json.loads(snapshot.read_text())
    snapshot.write_text(json.dumps({**document, "status": "InProgress"}))  # as kill -9 leaves it
    shown = smdist(folder, "status", "search")
    assert shown.returncode == 1
    assert shown.stdout.startswith("search\tStopped\t")
    assert "its search ended without recording an outcome" in shown.stdout
    assert "`smdist tune FILE --local` with the same job file resumes it" in shown.stdout


# ---- a name that is no local job --------------------------------------------------------------
@pytest.mark.parametrize("command", ["status", "logs", "stop"])
def test_a_mistyped_study_name_gets_a_suggestion_not_an_aws_error(done, command):
    answer = smdist(done.folder, command, "serach")
    assert answer.returncode == 2
    assert answer.stderr.splitlines()[0] == "no such job"
    assert "no local job or study 'serach' under .smdist; did you mean 'search'?" in answer.stderr
    assert "Traceback" not in answer.stderr


def test_a_mistyped_job_name_with_a_region_but_no_credentials_gets_a_suggestion(done):
    name = done.hello
    typo = name[:-1] + ("x" if name[-1] != "x" else "y")
    answer = smdist(done.folder, "status", typo, region="us-west-2")
    assert answer.returncode == 2
    first, second = answer.stderr.splitlines()[:2]
    assert first == "no such job"
    assert f"no local job or study {typo!r} under .smdist; did you mean {name!r}?" in second
    assert not second.lstrip(" -").startswith("AWS error")


def test_a_name_found_nowhere_with_no_aws_region_says_both(tmp_path):
    done = smdist(tmp_path, "status", "my-job")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "no such job",
        "  - job_name: no local job or study 'my-job' under .smdist, and no AWS region is "
        "configured to look on SageMaker; valid: a name `smdist jobs` lists, or a SageMaker "
        "job's with a region (--region, AWS_REGION or `aws configure`)",
    ]


def test_a_name_found_nowhere_with_a_region_but_no_credentials_says_both(tmp_path):
    done = smdist(tmp_path, "logs", "my-job", region="us-west-2")
    assert done.returncode == 2
    assert "no local job or study 'my-job' under .smdist, and SageMaker could not be asked: " in (
        done.stderr
    )
    assert "valid: a name `smdist jobs` lists, or a SageMaker job's with AWS credentials" in (
        done.stderr
    )


# ---- smdist jobs ------------------------------------------------------------------------------
def test_jobs_lists_jobs_trials_and_studies_newest_first(done):
    hello = done.hello
    listed = smdist(done.folder, "jobs")
    assert listed.returncode == 0, listed.stderr
    header, *lines = listed.stdout.splitlines()
    assert header.split() == ["NAME", "KIND", "STARTED", "DURATION", "STATUS", "TRIALS"]
    kinds = [tuple(line.split()[:2]) for line in lines]
    assert sorted(kinds) == [(hello, "job"), ("search", "study"), ("search-0", "trial"),
                             ("search-1", "trial")], listed.stdout  # fmt: skip
    assert kinds[-1] == (hello, "job")  # the oldest, last
    study = next(line for line in lines if line.split()[:2] == ["search", "study"])
    assert "Completed  2 of 2 trial(s) completed, best train:loss=1.5 (trial " in study
    rows = json.loads(smdist(done.folder, "jobs", "--json").stdout)
    by_name = {row["name"]: row for row in rows}
    assert by_name[hello]["status"] == "Completed" and by_name[hello]["kind"] == "job"
    assert 0 <= by_name[hello]["duration"] < 120
    started = [row["started"] for row in rows]
    assert started == sorted(started, reverse=True)


def test_jobs_lists_an_unreadable_record_without_stopping(done, tmp_path):
    folder = copy_of(done, tmp_path)
    broken = folder / ".smdist" / "jobs" / "broken"
    (broken / "logs").mkdir(parents=True)
    (broken / "job.json").write_text('{"status": "Done"}')
    listed = smdist(folder, "jobs")
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("broken"))
    assert "unreadable: is not a job record smdist wrote: its 'status' is 'Done'" in line
    assert any(line.startswith(done.hello) for line in listed.stdout.splitlines())


def test_jobs_with_nothing_under_the_root_says_so_in_one_line(tmp_path):
    done = smdist(tmp_path, "jobs", "--root", "nowhere")
    assert done.returncode == 0
    assert done.stdout == "no local jobs or studies under nowhere (`smdist run FILE` starts one)\n"
    assert json.loads(smdist(tmp_path, "jobs", "--json").stdout) == []
