"""A HyperPod Slurm job read back: its status from Slurm's answers and its folder, its log
labelled by node, and the head node reached over ssh with every word quoted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path, PurePosixPath

import pytest
from cli_process import run_smdist

from smdist.backends.base import JobStatus
from smdist.backends.hyperpod_slurm import job as job_module
from smdist.backends.hyperpod_slurm.head import Head
from smdist.backends.hyperpod_slurm.job import SlurmJob
from smdist.backends.hyperpod_slurm.log_lines import LogReader
from smdist.backends.hyperpod_slurm.slurm import SlurmState

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from head_node_ssh import head_node_ssh, recorded_calls  # noqa: E402


def test_log_lines_are_labelled_with_the_node_of_their_task():
    log = (
        b"smdist-slurm: job 9, run 1, on n1,n2\n0: first\n1: second\nsrun: error: n2: task 1\n"
        b"smdist-slurm: job 9, run 2, on n3,n1\n0: again\n1: par"
    )
    reader = LogReader(lambda offset: log[offset:])
    assert reader.lines() == [
        "batch | smdist-slurm: job 9, run 1, on n1,n2",
        "n1 | first",
        "n2 | second",
        "batch | srun: error: n2: task 1",
        "batch | smdist-slurm: job 9, run 2, on n3,n1",
        "n3 | again",
    ]  # the unfinished line waits for its end
    assert reader.lines(final=True) == ["n1 | par"]
    assert LogReader(lambda offset: None).lines() == []


def make_job(tmp_path: Path, described: SlurmState | None, monkeypatch) -> SlurmJob:
    monkeypatch.setattr(job_module.slurm, "describe", lambda head, job_id: described)
    record = {"name": "hp-1", "slurm_job_id": 9, "job_root": str(tmp_path), "head_node": None}
    (tmp_path / "hp-1" / "logs").mkdir(parents=True)
    return SlurmJob(record)


@pytest.mark.parametrize(
    ("state", "stop", "status"),
    [
        ("PENDING", False, JobStatus.IN_PROGRESS),
        ("REQUEUED", False, JobStatus.IN_PROGRESS),
        ("RUNNING", True, JobStatus.STOPPING),
        ("COMPLETED", False, JobStatus.COMPLETED),
        ("FAILED", False, JobStatus.FAILED),
        ("FAILED", True, JobStatus.STOPPED),
        ("CANCELLED by 0", False, JobStatus.STOPPED),
        ("NODE_FAIL", False, JobStatus.FAILED),
        ("TIMEOUT", False, JobStatus.FAILED),
    ],
)
def test_slurms_states_in_sagemakers_words(tmp_path, monkeypatch, state, stop, status):
    job = make_job(tmp_path, SlurmState(state=state, exit_code="1:0"), monkeypatch)
    if stop:
        (tmp_path / "hp-1" / "stop-requested").touch()
    assert job.status is status


def test_a_job_slurm_forgot_is_read_from_its_folder(tmp_path, monkeypatch):
    job = make_job(tmp_path, None, monkeypatch)
    folder = tmp_path / "hp-1"
    (folder / "logs" / "hp-1_9.out").write_text("0: Traceback\n0: ValueError: bad shape\n")
    assert job.status is JobStatus.FAILED
    assert "Slurm no longer knows the job" in (job.failure_reason or "")
    (folder / "exit_code").write_text("1\n")
    assert job.failure_reason == "the batch step exited 1; task 0 | ValueError: bad shape"
    (folder / "exit_code").write_text("0\n")
    assert job.status is JobStatus.COMPLETED
    assert job.model_artifacts == f"file://{folder / 'model'}"


@pytest.fixture()
def ssh_head(tmp_path: Path, monkeypatch) -> tuple[Head, Path]:
    tools = head_node_ssh(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("SSH_RECORD", str(tmp_path / "ssh.log"))
    return Head("me@head-1"), tmp_path / "ssh.log"


def test_the_head_node_gets_every_word_as_it_was_given(ssh_head, tmp_path: Path):
    head, record = ssh_head
    words = ["it's", "$HOME", "`id`", "a  b", "; rm -rf /"]
    done = head.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))",
                     *words])  # fmt: skip
    assert json.loads(done.stdout) == words
    folder = PurePosixPath(tmp_path / "shared fs" / "it's a job")
    head.make_folders([folder])
    head.write_files(folder, {"code/train.py": b"print(1)\n", "job.sbatch": Path(__file__)})
    assert Path(folder / "code" / "train.py").read_bytes() == b"print(1)\n"
    assert head.read_bytes(folder / "code" / "train.py", 6) == b"1)\n"
    assert head.read_tail(folder / "code" / "train.py", 3) == b"1)\n"
    assert head.read_bytes(folder / "none") is None
    head.touch(folder / "stop-requested")
    assert Path(folder / "stop-requested").is_file()
    assert {call["host"] for call in recorded_calls(record)} == {"me@head-1"}


def test_a_head_node_ssh_cannot_reach_is_exit_2_naming_it(tmp_path: Path, monkeypatch):
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ssh").write_text("#!/bin/sh\necho 'ssh: Could not resolve hostname' >&2\nexit 255\n")
    (tools / "ssh").chmod(0o755)
    job = tmp_path / "job.yaml"
    job.write_text((REPO / "examples" / "pytorch_ddp.yaml").read_text())
    path = f"{tools}:{os.environ['PATH']}"
    sent = run_smdist("submit", str(job), "--backend", "hyperpod-slurm", "--head-node", "nohost",
                      "--root", str(tmp_path / "records"), cwd=tmp_path, path=path)  # fmt: skip
    assert sent.returncode == 2, sent.stderr
    assert "--head-node: cannot reach Slurm: ssh could not run a command there" in sent.stderr
    assert "Could not resolve hostname" in sent.stderr and "Traceback" not in sent.stderr


@pytest.mark.parametrize(("state", "sent"), [("PENDING", "scancel"), ("RUNNING", "TERM")])
def test_a_stop_signals_a_running_job_and_cancels_a_waiting_one(tmp_path, monkeypatch, state, sent):
    job = make_job(tmp_path, SlurmState(state=state), monkeypatch)
    calls = []
    monkeypatch.setattr(job_module.slurm, "cancel", lambda head, job_id: calls.append("scancel"))
    monkeypatch.setattr(
        job_module.slurm, "signal_steps", lambda head, job_id, signal: calls.append(signal)
    )
    assert job.request_stop()
    assert calls == [sent]
    assert (tmp_path / "hp-1" / "stop-requested").is_file()
    assert job.status is JobStatus.STOPPING
