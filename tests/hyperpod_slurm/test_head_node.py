"""A job submitted through a head node over ssh (here an ssh stand-in that runs the command
line on this machine, as sshd would on the head node): the folder written with one tar stream,
sbatch, status and logs all through it."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).parent / "user_scripts"
SSH_STAND_IN = """#!{python}
import os, sys
arguments = sys.argv[1:]
at = arguments.index("--")
with open(os.environ["SSH_RECORD"], "a") as record:
    record.write(arguments[at + 2] + "\\n")
os.execvp("bash", ["bash", "-c", arguments[at + 2]])
"""


def test_a_job_submitted_and_followed_through_a_head_node(slurm, tmp_path: Path):
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ssh").write_text(SSH_STAND_IN.format(python=sys.executable))
    (tools / "ssh").chmod(0o755)
    record = tmp_path / "ssh.log"
    saved = dict(slurm.stand.env)
    slurm.stand.env.update(PATH=f"{tools}:{saved['PATH']}", SSH_RECORD=str(record))
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: via-head\n"
        "strategy: {kind: pytorch_ddp, launcher: torchrun, processes_per_host: 1}\n"
        "cluster: {instance_type: ml.c5.xlarge, instance_count: 2}\n"
        f"code: {{entry_point: train.py, source_dir: {SCRIPTS / 'resumable'}}}\n"
        "environment: {STEPS: '3'}\n"
    )
    try:
        flags = [*slurm.submit_flags(processes_per_node=1), "--head-node", "ubuntu@head-1"]
        sent = slurm.smdist("submit", str(job), *flags, "--wait")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        name = sent.stdout.splitlines()[0]
        status = slurm.smdist("status", name, "--root", str(slurm.root))
        assert status.stdout.split("\t")[:2] == [name, "Completed"]
        assert "(ubuntu@head-1)" in status.stdout
        logs = slurm.smdist("logs", name, "--root", str(slurm.root)).stdout
        assert "node1 | done at step 3" in logs
    finally:
        slurm.stand.env.clear()
        slurm.stand.env.update(saved)
    commands = record.read_text().splitlines()
    assert any(line.startswith("sbatch --parsable ") for line in commands)
    assert any(line.startswith("tar -x -f - -C ") for line in commands)
    assert any(line.startswith("scontrol -o show job ") for line in commands)
