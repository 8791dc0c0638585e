"""Scripts written for SageMaker run unchanged on the test Slurm: the SM_* contract on every
node (hosts, current host, model directory, a channel on the shared file system,
hyperparameters), and a requeued job resuming from its newest checkpoint.

The contract's job is submitted and followed through a head node (an ssh stand-in that runs
the command line on this machine, as sshd would on the head node): the folder written with one
tar stream, sbatch, status and logs all through it. The other jobs here are submitted on this
machine directly. Every script here is standard library only, under smdist's torchrun on each
node: Slurm's handling is what is proved, and torch training on Slurm is the README DDP and SMP
v2 examples' (test_ddp_example, test_smp_v2)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "user_scripts"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from head_node_ssh import head_node_ssh, recorded_calls  # noqa: E402, I001

# Enough steps (0.5 s each) that the job still runs when the test requeues it after step 6,
# even on a busy machine; few enough that the resumed run is short.
STEPS = 30


def _job_file(tmp_path: Path, name: str, body: str, nodes: int = 2) -> Path:
    job = tmp_path / f"{name}.yaml"
    job.write_text(
        f"name: {name}\n"
        "strategy: {kind: pytorch_ddp, launcher: torchrun, processes_per_host: 2}\n"
        f"cluster: {{instance_type: ml.c5.xlarge, instance_count: {nodes}}}\n" + body
    )
    return job


def test_a_sagemaker_script_sent_through_a_head_node_reads_its_contract_on_every_node(
    slurm, tmp_path: Path
):
    tools = head_node_ssh(tmp_path / "bin")
    record = tmp_path / "ssh.log"
    data = slurm.folder / "fsx" / "data" / "train"
    data.mkdir(parents=True, exist_ok=True)
    (data / "values.txt").write_text("\n".join(str(v) for v in range(1, 9)) + "\n")
    job = _job_file(
        tmp_path,
        "sm-style",
        f"code: {{entry_point: train.py, source_dir: {SCRIPTS / 'sagemaker_style'}}}\n"
        f"inputs: {{training: 'file://{data}'}}\n"
        "hyperparameters: {epochs: 2, learning-rate: 0.5}\n",
    )
    saved = dict(slurm.stand.env)
    slurm.stand.env.update(PATH=f"{tools}:{saved['PATH']}", SSH_RECORD=str(record))
    try:
        flags = [*slurm.submit_flags(), "--head-node", "ubuntu@head-1"]
        sent = slurm.smdist("submit", str(job), *flags, "--wait")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        name = sent.stdout.splitlines()[0]
        status = slurm.smdist("status", name, "--root", str(slurm.root))
        assert status.stdout.split("\t")[:2] == [name, "Completed"]
        assert "(ubuntu@head-1)" in status.stdout
        logs = slurm.smdist("logs", name, "--root", str(slurm.root)).stdout.splitlines()
        for node in ("node1", "node2"):  # every node's output, read through the head node
            assert any(
                line.startswith(f"{node} | ") and f"on {node}: weight 36" in line for line in logs
            ), logs
    finally:
        slurm.stand.env.clear()
        slurm.stand.env.update(saved)
    commands = [call["command"] for call in recorded_calls(record)]
    assert any(line.startswith("sbatch --parsable ") for line in commands)
    assert any(line.startswith("tar -x -f - -C ") for line in commands)
    assert any(line.startswith("scontrol -o show job ") for line in commands)
    model = slurm.job_root / name / "model"
    for node in ("node1", "node2"):
        seen = json.loads((model / f"seen-{node}.json").read_text())
        assert seen["hosts"] == seen["training_env_hosts"] == ["node1", "node2"]
        assert seen["current_host"] == node
        assert seen["hps"] == {"epochs": 2, "learning-rate": 0.5}
        assert seen["num_gpus"] == 0 and seen["world"] == 4
        assert seen["weight"] == 36.0  # 0.5 x (1 + ... + 8) x 2 epochs: every shard was read
    channel = slurm.job_root / name / "hosts" / "node2" / "input" / "data" / "training"
    assert channel.resolve() == data.resolve()  # the channel is the shared folder itself
    config = slurm.job_root / name / "hosts" / "node2" / "input" / "config"
    assert json.loads((config / "resourceconfig.json").read_text())["current_host"] == "node2"


def _start_now(slurm, slurm_job_id: str) -> None:
    """Slurm holds a requeued job back for a while (Reason=BeginTime); the test lets it start
    at once."""
    deadline = time.monotonic() + 60
    while (
        "JobState=PENDING"
        not in slurm.stand.run("scontrol", "-o", "show", "job", slurm_job_id).stdout
    ):
        assert time.monotonic() < deadline
        time.sleep(0.5)
    slurm.stand.run("scontrol", "update", f"JobId={slurm_job_id}", "StartTime=now")


def _status(slurm, name: str) -> tuple[str, str]:
    shown = slurm.smdist("status", name, "--root", str(slurm.root))
    return shown.stdout.split("\t")[1], shown.stdout


def _wait_until_slurm_says(slurm, slurm_job_id: str, state: str, timeout: float = 60) -> None:
    """Wait on ``scontrol`` (no ``smdist`` process per look) until the job is in ``state``."""
    deadline = time.monotonic() + timeout
    while f"JobState={state}" not in (
        shown := slurm.stand.run("scontrol", "-o", "show", "job", slurm_job_id).stdout
    ):
        assert time.monotonic() < deadline, shown
        time.sleep(0.5)


def test_a_requeued_job_resumes_from_its_newest_checkpoint(slurm, tmp_path: Path):
    job = _job_file(
        tmp_path,
        "resumable",
        f"code: {{entry_point: train.py, source_dir: {SCRIPTS / 'resumable'}}}\n"
        f"environment: {{STEPS: '{STEPS}'}}\n",
    )
    sent = slurm.smdist("submit", str(job), *slurm.submit_flags(processes_per_node=1))
    assert sent.returncode == 0, sent.stderr
    name = sent.stdout.splitlines()[0]
    record = json.loads((slurm.root / "hyperpod-slurm" / f"{name}.json").read_text())
    slurm.wait_for_output(name, "node1 | step 6\n")
    slurm_job_id = str(record["slurm_job_id"])
    requeued = slurm.stand.run("scontrol", "requeue", slurm_job_id)
    assert requeued.returncode == 0, requeued.stderr
    _start_now(slurm, slurm_job_id)
    slurm.wait_for_output(name, f"done at step {STEPS}", timeout=300)
    logs = slurm.smdist("logs", name, "--root", str(slurm.root)).stdout
    assert f"node1 | done at step {STEPS}" in logs
    assert ", run 2, on node1,node2" in logs
    resumed = [line for line in logs.splitlines() if "resumed from step" in line]
    assert len(resumed) == 1 and int(resumed[0].split()[-1]) >= 6, logs
    final = json.loads((slurm.job_root / name / "model" / "final.json").read_text())
    assert final == {"step": STEPS, "total": 2.0 * STEPS}  # no step lost, none counted twice
    _wait_until_slurm_says(slurm, slurm_job_id, "COMPLETED")
    deadline = time.monotonic() + 60
    while (status := _status(slurm, name))[0] != "Completed":
        assert time.monotonic() < deadline, status[1]
        time.sleep(1)
    assert "requeued: 1 time(s)" in status[1]


@pytest.mark.parametrize("grace", [3])
def test_stop_cancels_a_job_that_outlives_its_grace(slurm, tmp_path: Path, grace: int):
    # One node: the grace and the cancel after it are what is proved, not how many nodes end
    # (the SIGTERM-first stop in test_ddp_example stops two).
    job = _job_file(
        tmp_path,
        "stubborn",
        f"code: {{entry_point: train.py, source_dir: {SCRIPTS / 'stoppable'}}}\n"
        "environment: {IGNORE_SIGTERM: '1'}\n",
        nodes=1,
    )
    flags = [*slurm.submit_flags(processes_per_node=1), "--grace", str(grace)]
    sent = slurm.smdist("submit", str(job), *flags)
    assert sent.returncode == 0, sent.stderr
    name = sent.stdout.splitlines()[0]
    slurm.wait_for_output(name, "node1 | running")  # it ignores SIGTERM from here on
    stopped = slurm.smdist("stop", name, "--root", str(slurm.root), "--wait", "--poll", "1")
    assert stopped.returncode == 0, stopped.stderr
    assert f"still running {grace} s after SIGTERM: scancel" in stopped.stderr
    assert _status(slurm, name)[0] == "Stopped"
    assert "SIGTERM ignored" in slurm.smdist("logs", name, "--root", str(slurm.root)).stdout
