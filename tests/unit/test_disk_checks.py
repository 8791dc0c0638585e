"""Paths a job names are checked against the disk before anything is packed, uploaded or run.

Each case builds real directories and job files under ``tmp_path`` and loads them through
``smdist.load``; the command-line cases run the real ``smdist validate`` (exit 2, the field on
stderr, never a traceback) and ``smdist.fit`` is shown to refuse before starting anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import smdist
from smdist import Cluster, Code, JobSpec, PyTorchDDP
from smdist.checks.disk import check_paths, ready_entry_points
from smdist.errors import SpecError


def job_text(**code: str) -> str:
    lines = [
        "name: disk",
        "strategy: {kind: pytorch_ddp}",
        "cluster: {instance_type: ml.p3.16xlarge, instance_count: 2}",
    ]
    if code:
        lines.append("code:")
        lines += [f"  {key}: {value!r}" for key, value in code.items()]
    return "\n".join(lines) + "\n"


def write_job(tmp_path: Path, extra: str = "", **code: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(job_text(**code) + extra)
    return path


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """A source directory with a script at the top and one in a package."""
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print('train')\n")
    (root / "pkg" / "main.py").write_text("print('main')\n")
    return root


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        smdist.load(path)
    return [str(p) for p in caught.value.problems]


def only_problem(path: Path) -> str:
    problems = problems_of(path)
    assert len(problems) == 1, problems
    return problems[0]


def validate(path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("smdist")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "smdist.cli.app"]
    return subprocess.run(
        [*command, "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def assert_refused_by_cli(path: Path, field: str, env: dict[str, str] | None = None) -> str:
    result = validate(path, env)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output and "PermissionError" not in output
    assert f"{field}: " in result.stderr, result.stderr
    return result.stderr


# ---- source_dir ----------------------------------------------------------------------------
def test_a_source_dir_with_its_entry_point_is_valid(tmp_path, src):
    spec = smdist.load(write_job(tmp_path, source_dir=str(src), entry_point="train.py"))
    assert spec.code.source_dir == str(src)
    assert (
        validate(write_job(tmp_path, source_dir="src", entry_point="pkg/main.py")).returncode == 0
    )


def test_a_relative_source_dir_is_found_next_to_the_job_file(tmp_path, src):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    spec = smdist.load(write_job(jobs, source_dir="../src", entry_point="train.py"))
    assert spec.code.source_dir == str(src)


def test_a_missing_source_dir_is_refused(tmp_path):
    path = write_job(tmp_path, source_dir="nowhere", entry_point="train.py")
    problem = only_problem(path)
    assert problem.startswith("code.source_dir: does not exist")
    assert str(tmp_path / "nowhere") in problem
    assert_refused_by_cli(path, "code.source_dir")


def test_a_source_dir_that_is_a_file_is_refused(tmp_path, src):
    path = write_job(tmp_path, source_dir="src/train.py", entry_point="train.py")
    assert only_problem(path).startswith("code.source_dir: is not a directory")


def test_the_root_directory_is_never_a_source_dir(tmp_path):
    path = write_job(tmp_path, source_dir="/", entry_point="train.py")
    assert only_problem(path).startswith("code.source_dir: is the root directory")
    assert_refused_by_cli(path, "code.source_dir")


def test_the_home_directory_and_its_parents_are_never_a_source_dir(tmp_path):
    home = tmp_path / "users" / "someone"
    home.mkdir(parents=True)
    (home / "train.py").write_text("")
    for given, what in ((home, "is your home directory"), (home.parent, "holds your home")):
        path = write_job(tmp_path, source_dir=str(given), entry_point="train.py")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(home))
            assert only_problem(path).startswith(f"code.source_dir: {what}")
        assert_refused_by_cli(path, "code.source_dir", env={"HOME": str(home)})


def test_a_source_dir_under_home_is_fine(tmp_path, src, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    smdist.load(write_job(tmp_path, source_dir=str(src), entry_point="train.py"))


def test_a_nul_in_source_dir_is_a_problem_not_a_crash():
    spec = JobSpec(
        name="disk",
        strategy=PyTorchDDP(),
        cluster=Cluster(instance_type="ml.p3.16xlarge"),
        code=Code(source_dir="src\x00/x", entry_point="train.py"),
    )
    (problem,) = check_paths(spec)
    assert problem.path == "code.source_dir" and "NUL" in problem.message


# ---- entry_point ---------------------------------------------------------------------------
def test_an_absolute_entry_point_is_refused(tmp_path, src):
    path = write_job(tmp_path, source_dir="src", entry_point="/etc/passwd")
    problem = only_problem(path)
    assert problem.startswith("code.entry_point: is an absolute path")
    assert "/etc/passwd" in problem
    assert_refused_by_cli(path, "code.entry_point")


def test_an_entry_point_climbing_out_with_dot_dot_is_refused_even_if_it_exists(tmp_path, src):
    (tmp_path / "outside.py").write_text("")
    path = write_job(tmp_path, source_dir="src", entry_point="../outside.py")
    assert only_problem(path).startswith("code.entry_point: climbs out with '..'")


def test_an_entry_point_symlinked_outside_source_dir_is_refused(tmp_path, src):
    (tmp_path / "secret.py").write_text("")
    (src / "link.py").symlink_to(tmp_path / "secret.py")
    path = write_job(tmp_path, source_dir="src", entry_point="link.py")
    problem = only_problem(path)
    assert problem.startswith("code.entry_point: is a symlink to")
    assert "outside code.source_dir" in problem


def test_an_entry_point_symlinked_inside_source_dir_is_fine(tmp_path, src):
    (src / "run.py").symlink_to(src / "train.py")
    smdist.load(write_job(tmp_path, source_dir="src", entry_point="run.py"))


def test_a_missing_entry_point_is_refused_listing_the_scripts_there(tmp_path, src):
    path = write_job(tmp_path, source_dir="src", entry_point="trian.py")
    problem = only_problem(path)
    assert problem.startswith(f"code.entry_point: is not a file in {src}")
    assert "train.py" in problem.split("valid:")[1]
    assert_refused_by_cli(path, "code.entry_point")


def test_a_directory_as_entry_point_is_refused(tmp_path, src):
    path = write_job(tmp_path, source_dir="src", entry_point="pkg")
    assert only_problem(path).startswith("code.entry_point: is not a file")


def test_without_an_entry_point_the_ready_script_must_be_in_source_dir(tmp_path, src):
    path = write_job(tmp_path, source_dir="src")
    problem = only_problem(path)
    assert problem.startswith("code.entry_point: is not set")
    assert "'pytorch_ddp.py'" in problem
    (src / "pytorch_ddp.py").write_text("")
    smdist.load(path)


def test_without_source_dir_the_entry_point_must_be_a_ready_script(tmp_path):
    assert "pytorch_ddp.py" in ready_entry_points()
    smdist.load(write_job(tmp_path, entry_point="pytorch_ddp.py"))
    path = write_job(tmp_path, entry_point="train.py")
    problem = only_problem(path)
    assert problem.startswith("code.entry_point: is not one of smdist's ready scripts")
    assert "pytorch_ddp.py" in problem.split("valid:")[1]


# ---- file:// inputs and outputs ------------------------------------------------------------
def test_file_inputs_must_exist(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    extra = f"inputs:\n  train: file://{data}\n  test: file://{tmp_path}/missing\n"
    path = write_job(tmp_path, extra)
    problem = only_problem(path)
    assert problem.startswith("inputs.test.uri: does not exist on this machine")
    assert_refused_by_cli(path, "inputs.test.uri")


def test_a_file_output_path_needs_an_existing_parent(tmp_path):
    smdist.load(write_job(tmp_path, f"output_path: file://{tmp_path}/out\n"))
    path = write_job(tmp_path, f"output_path: file://{tmp_path}/no/out\n")
    problem = only_problem(path)
    assert problem.startswith(f"output_path: its parent directory {tmp_path}/no does not exist")


def test_s3_locations_are_not_looked_for_on_disk(tmp_path):
    extra = "inputs:\n  train: s3://bucket/train\noutput_path: s3://bucket/out\n"
    smdist.load(write_job(tmp_path, extra))


def test_every_path_problem_is_reported_at_once(tmp_path):
    extra = f"inputs:\n  train: file://{tmp_path}/missing\noutput_path: file:///no/such/out\n"
    path = write_job(tmp_path, extra, source_dir="nowhere", entry_point="train.py")
    fields = [p.split(":")[0] for p in problems_of(path)]
    assert fields == ["code.source_dir", "inputs.train.uri", "output_path"]


# ---- fit checks a spec built in Python before anything starts ------------------------------
def test_fit_refuses_a_missing_source_dir_before_starting_anything(tmp_path):
    spec = JobSpec(
        name="disk",
        strategy=PyTorchDDP(),
        cluster=Cluster(instance_type="ml.m5.xlarge"),
        code=Code(source_dir=str(tmp_path / "nowhere"), entry_point="train.py"),
    )
    root = tmp_path / "root"
    with pytest.raises(SpecError, match="code.source_dir: does not exist"):
        smdist.fit(spec, options={"root": root})
    assert not root.exists()
