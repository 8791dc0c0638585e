"""The exit-code rule, through the real ``smdist`` command: 2 and one message for anything the
user must fix before a job can run (never a traceback unless --debug asks for it), 1 only for
a job that ran and failed (tests/integration/test_failure_reasons.py), 0 for success.

A process costs more than the rule it checks, so where several cases take the same way out
(a missing file under each command, a usage error of each kind), the first runs the command as
a process of its own and the rest its ``main`` in this process (``IN_PROCESS``), with the same
directory, PATH and environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.backends.local import PrepareError
from smdist.cli.app import main
from smdist.errors import Problem, SpecError
from smdist.exit_codes import EXIT_INTERNAL, EXIT_INVALID, exit_code_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_SCRIPT = Path(sys.executable).with_name("smdist")  # the console script pip installed
COMMAND = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "smdist.cli.app"]


def python_only_path(tmp_path: Path) -> str:
    """A PATH holding nothing but this interpreter: no mpirun, no docker, no torchrun."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("python", "python3"):
        (bin_dir / name).symlink_to(sys.executable)
    return str(bin_dir)


def smdist(
    tmp_path: Path, *args: str, path: str | None = None, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SMDIST_DEBUG"}
    if path is not None:
        env["PATH"] = path
    env.update(environ or {})
    return subprocess.run(
        [*COMMAND, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


PROCESS, IN_PROCESS = "process", "main"  # how a case runs: the real command, or its main


def smdist_main(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``smdist(tmp_path, *args, path=path)`` through ``main`` in this process."""
    monkeypatch.delenv("SMDIST_DEBUG", raising=False)
    if path is not None:
        monkeypatch.setenv("PATH", path)
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["smdist", *args], code, out.getvalue(), err.getvalue())


def run_as(
    how: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    if how == IN_PROCESS:
        return smdist_main(monkeypatch, tmp_path, *args, path=path)
    return smdist(tmp_path, *args, path=path)


def message_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("example", "how"),
    [("horovod_pytorch", PROCESS), ("sddp", IN_PROCESS), ("smp_v1", IN_PROCESS)],
)
def test_a_missing_mpirun_is_exit_2_with_one_line_and_nothing_started(
    tmp_path, monkeypatch, example, how
):
    root = tmp_path / ".smdist"
    result = run_as(
        how, monkeypatch, tmp_path,
        "run", str(EXAMPLES / f"{example}.yaml"), "--root", str(root), "--cpu",
        path=python_only_path(tmp_path),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = message_lines(result)
    assert len(lines) == 1, result.stderr
    assert "mpirun" in lines[0] and "install Open MPI" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert not (root / "jobs").exists()  # refused before any host was made


@pytest.fixture(scope="module")
def run_missing(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """``smdist run missing.yaml``, a process: one case below and the quiet half of --debug's."""
    return smdist(tmp_path_factory.mktemp("missing"), "run", "missing.yaml")


@pytest.mark.parametrize(
    ("args", "how"),
    [
        (["run", "missing.yaml"], PROCESS),
        (["validate", "missing.yaml"], IN_PROCESS),
        (["plan", "missing.yaml"], IN_PROCESS),
        (["submit", "--dry-run", "missing.yaml"], IN_PROCESS),
    ],
    ids=["run", "validate", "plan", "submit"],
)
def test_a_job_file_that_does_not_exist_is_exit_2_naming_it(
    tmp_path, monkeypatch, request, args, how
):
    if how == IN_PROCESS:
        result = smdist_main(monkeypatch, tmp_path, *args)
    else:
        result = request.getfixturevalue("run_missing")
    assert result.returncode == 2, result.stderr
    assert "missing.yaml" in result.stderr and "cannot read the job file" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_job_file_that_cannot_be_read_is_exit_2(tmp_path):
    (tmp_path / "job.yaml").mkdir()  # a directory: unreadable as a file, even for root
    result = smdist(tmp_path, "validate", "job.yaml")
    assert result.returncode == 2, result.stderr
    assert "job.yaml: cannot read the job file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "how"),
    [
        (["run", "job.yaml", "--no-such-option"], PROCESS),
        (["run", "job.yaml", "--hosts", "0"], IN_PROCESS),
        (["run", "job.yaml", "--grace", "soon"], IN_PROCESS),
        (["validate"], IN_PROCESS),
        (["no-such-command"], IN_PROCESS),
        (["submit", "job.yaml", "--backend", "kubernetes"], IN_PROCESS),
    ],
    ids=["unknown-option", "hosts-0", "grace-text", "no-job-file", "unknown-command", "backend"],
)
def test_a_bad_option_is_exit_2(tmp_path, monkeypatch, args, how):
    (tmp_path / "job.yaml").write_text((EXAMPLES / "mwms.yaml").read_text())
    result = run_as(how, monkeypatch, tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip()
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback_and_ends_with_what_to_fix(tmp_path, run_missing):
    quiet = run_missing
    loud = smdist(tmp_path, "--debug", "run", "missing.yaml")
    assert (quiet.returncode, loud.returncode) == (2, 2)
    assert "Traceback (most recent call last)" not in quiet.stderr
    assert "Traceback (most recent call last)" in loud.stderr
    assert "smdist.errors.SpecError" in loud.stderr
    assert message_lines(loud)[-1] == message_lines(quiet)[-1]


def test_the_debug_variable_shows_the_traceback_too(tmp_path):
    result = smdist(
        tmp_path,
        "run", str(EXAMPLES / "sddp.yaml"), "--root", str(tmp_path / ".smdist"),
        path=python_only_path(tmp_path),
        environ={"SMDIST_DEBUG": "1"},
    )  # fmt: skip
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert "PrepareError" in result.stderr
    assert "mpirun" in message_lines(result)[-1]


@pytest.mark.skipif(
    importlib.util.find_spec("sagemaker") is None, reason="needs the sagemaker extra"
)
@pytest.mark.parametrize("with_role", [False, True], ids=["no-role", "no-credentials"])
def test_submit_without_a_role_or_credentials_is_exit_2(tmp_path, with_role):
    no_aws = {
        "HOME": str(tmp_path),
        "AWS_EC2_METADATA_DISABLED": "true",  # no credentials from an instance either
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMDIST_"))}
    role = ["--role", "arn:aws:iam::123456789012:role/SageMakerRole", "--bucket", "b"]
    result = subprocess.run(
        [*COMMAND, "submit", str(EXAMPLES / "pytorch_ddp.yaml"), "--region", "us-west-2"]
        + (role if with_role else []),
        cwd=tmp_path,
        env={**env, **no_aws},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert ("credentials" if with_role else "role") in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (SpecError([Problem("cluster.instance_count", "must be >= 1", 0)]), EXIT_INVALID),
        (PrepareError("this distribution starts with mpirun"), EXIT_INVALID),
        (FileNotFoundError(2, "No such file or directory", "data/"), EXIT_INVALID),
        (PermissionError(13, "Permission denied", "/root/.smdist"), EXIT_INVALID),
        (RuntimeError("a bug"), EXIT_INTERNAL),
        (KeyError("x"), EXIT_INTERNAL),
    ],
)
def test_setup_errors_and_the_os_refusing_map_to_2_anything_else_to_70(error, code):
    assert exit_code_for(error) == code


def test_aws_errors_before_a_job_runs_are_exit_2():
    botocore = pytest.importorskip("botocore.exceptions")
    assert exit_code_for(botocore.NoCredentialsError()) == EXIT_INVALID
    assert exit_code_for(botocore.NoRegionError()) == EXIT_INVALID
