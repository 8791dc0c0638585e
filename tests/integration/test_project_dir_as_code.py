"""``source_dir: .``: a project directory holding its job file, smdist's own local root from
earlier runs, a virtualenv and tool caches. smdist's root never nests into a later job, and
neither a run nor a dry run ships what no training job needs."""

from __future__ import annotations

import json
import subprocess
import textwrap
import venv
from pathlib import Path

import pytest
from local_jobs import PYTHON, clean_environ

pytestmark = pytest.mark.integration

SCRIPT = "import os\nprint('hello from', os.environ['SM_CURRENT_HOST'], flush=True)\n"
PROJECT_FILES = {"train.py", "job.yaml"}


def make_project(root: Path) -> Path:
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / "job.yaml").write_text(
        textwrap.dedent(
            """
            name: hello
            strategy: {kind: mwms}
            cluster: {instance_type: ml.c5.xlarge, instance_count: 2}
            code: {source_dir: ., entry_point: train.py, framework_version: "2.16"}
            region: us-west-2
            role: arn:aws:iam::111122223333:role/SageMakerRole
            """
        )
    )
    venv.EnvBuilder(with_pip=False).create(root / ".venv")  # python -m venv .venv
    (root / ".ipynb_checkpoints").mkdir()
    (root / ".ipynb_checkpoints" / "explore-checkpoint.ipynb").write_text("{}")
    (root / ".pytest_cache" / "v").mkdir(parents=True)
    (root / ".pytest_cache" / "v" / "lastfailed").write_text("{}")
    return root


def smdist(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "-m", "smdist.cli.app", *args],
        cwd=project,  # the default root, .smdist, lands inside source_dir as a user's would
        env=clean_environ({"AWS_EC2_METADATA_DISABLED": "true"}),
        capture_output=True,
        text=True,
        timeout=300,
    )


def files_under(root: Path) -> dict[str, int]:
    return {
        path.relative_to(root).as_posix(): path.stat().st_size
        for path in root.rglob("*")
        if path.is_file()
    }


def code_files(job_dir: Path) -> dict[str, set[str]]:
    """Each emulated host's code directory, without smdist's runtime."""
    return {
        code.parent.name: {name for name in files_under(code) if not name.startswith("smdist/")}
        for code in sorted(job_dir.glob("hosts/*/code"))
    }


def test_three_runs_in_a_row_grow_the_root_only_by_each_jobs_own_files(tmp_path: Path):
    project = make_project(tmp_path / "project")
    root = project / ".smdist"
    before: dict[str, int] = {}
    jobs: set[Path] = set()
    grown: list[int] = []
    for attempt in range(3):
        run = smdist(project, "run", "job.yaml")
        assert run.returncode == 0, run.stdout + run.stderr
        after = files_under(root)
        new_job = sorted(set((root / "jobs").iterdir()) - jobs)
        assert len(new_job) == 1, new_job
        jobs.update(new_job)
        prefix = new_job[0].relative_to(root).as_posix() + "/"
        added = set(after) - set(before) - {"CACHEDIR.TAG"}  # written by the first run
        assert all(path.startswith(prefix) for path in added), sorted(added)[:10]
        assert {path: after[path] for path in before} == before  # earlier jobs untouched
        hosts = code_files(new_job[0])
        assert sorted(hosts) == ["algo-1", "algo-2"]
        for host, names in hosts.items():
            assert names == PROJECT_FILES, (attempt, host, sorted(names)[:10])
        grown.append(len(added))
        before = after
    # The same job leaves the same files each time: nothing of earlier runs rides along.
    assert grown[0] == grown[1] == grown[2], grown
    assert (root / "CACHEDIR.TAG").is_file()

    dry = smdist(project, "submit", "job.yaml", "--dry-run", "--bucket", "my-bucket")
    assert dry.returncode == 0, dry.stderr
    json.loads(dry.stdout)  # the request, as before
    code_line = next(line for line in dry.stderr.splitlines() if line.startswith("code: "))
    assert "(2 files, " in code_line, code_line
    left_out = dry.stderr[dry.stderr.index("left out (") :]
    for path, why in {
        ".smdist/": "smdist's local root",
        ".venv/": "left out by default: a virtualenv (pyvenv.cfg)",
        ".ipynb_checkpoints/": "left out by default: notebook checkpoints",
        ".pytest_cache/": "left out by default: a Python tool's cache",
    }.items():
        line = next(line for line in left_out.splitlines() if line.strip().startswith(path))
        assert why in line, line
    assert "large code upload" not in dry.stderr


def test_a_root_given_with_root_inside_the_project_is_left_out_on_later_runs(tmp_path: Path):
    project = make_project(tmp_path / "project")
    first = smdist(project, "run", "job.yaml", "--root", "runs")
    assert first.returncode == 0, first.stdout + first.stderr
    second = smdist(project, "run", "job.yaml")  # default root: runs/ is now just a folder
    assert second.returncode == 0, second.stdout + second.stderr
    (job_dir,) = (project / ".smdist" / "jobs").iterdir()
    for names in code_files(job_dir).values():
        assert names == PROJECT_FILES, sorted(names)[:10]


def test_an_explicit_smdistignore_rule_brings_a_default_back_into_the_hosts(tmp_path: Path):
    project = make_project(tmp_path / "project")
    (project / ".cache").mkdir()
    (project / ".cache" / "tokenizer.json").write_text("{}")
    (project / ".smdistignore").write_text("!.cache/\n")
    run = smdist(project, "run", "job.yaml")
    assert run.returncode == 0, run.stdout + run.stderr
    (job_dir,) = (project / ".smdist" / "jobs").iterdir()
    for names in code_files(job_dir).values():
        assert names == PROJECT_FILES | {".smdistignore", ".cache/tokenizer.json"}
