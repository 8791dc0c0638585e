"""The README's DDP example submitted to the test Slurm: two nodes of two processes each,
followed with ``smdist status``, ``logs`` and ``jobs``; and ``smdist stop`` on a long run
(one process per node), SIGTERM first. The long run is a standard-library script that exits 143
on SIGTERM, as the example's entry point does (whose SIGTERM checkpoint the entry points'
integration tests prove): what is proved here is the stop on Slurm, not torch."""

from __future__ import annotations

import json
from pathlib import Path

from slurm_stand import REPO

EXAMPLE = REPO / "examples" / "pytorch_ddp.yaml"
STOPPABLE = Path(__file__).parent / "user_scripts" / "stoppable"


def _job_name(done) -> str:
    return done.stdout.strip().splitlines()[0]


def test_the_readme_ddp_example_trains_on_two_nodes_of_two_processes(slurm):
    sent = slurm.smdist("submit", str(EXAMPLE), *slurm.submit_flags(), "--wait")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    name = _job_name(sent)
    assert "pytorch_ddp: 4 processes, backend gloo" in sent.stdout  # --wait streams the log
    status = slurm.smdist("status", name, "--root", str(slurm.root))
    assert status.returncode == 0, status.stderr
    first = status.stdout.splitlines()[0].split("\t")
    assert first[:2] == [name, "Completed"]
    assert "hyperpod-slurm: Slurm job" in first[2] and "node[1-2]" in first[2]
    folder = slurm.job_root / name
    assert f"model: file://{folder / 'model'}" in status.stdout
    assert (folder / "model" / "model.pt").is_file()
    assert sorted(p.name for p in (folder / "checkpoints").iterdir())  # resumable
    logs = slurm.smdist("logs", name, "--root", str(slurm.root))
    assert logs.returncode == 0, logs.stderr
    lines = logs.stdout.splitlines()
    assert lines[0].startswith("batch | smdist-slurm: job ") and "on node1,node2" in lines[0]
    for node in ("node1", "node2"):
        assert any(line.startswith(f"{node} | smdist-launcher: host {node}") for line in lines)
    ranks = {line.split("rank=")[1].split()[0] for line in lines if "weights_checksum" in line}
    assert ranks == {"0", "1", "2", "3"}
    listed = slurm.smdist("jobs", "--backend", "hyperpod-slurm", "--root", str(slurm.root))
    assert any(
        line.split()[:1] == [name] and "Completed" in line for line in listed.stdout.splitlines()
    )
    document = json.loads(slurm.smdist("status", name, "--root", str(slurm.root), "--json").stdout)
    assert document["slurm"]["state"] == "COMPLETED" and document["processes_per_node"] == 2


def _long_job(tmp_path: Path) -> Path:
    job = tmp_path / "long.yaml"
    job.write_text(
        "name: long\n"
        "strategy: {kind: pytorch_ddp, launcher: torchrun, processes_per_host: 1}\n"
        "cluster: {instance_type: ml.c5.xlarge, instance_count: 2}\n"
        f"code: {{entry_point: train.py, source_dir: {STOPPABLE}}}\n"
    )
    return job


def test_stop_sends_sigterm_first_and_the_job_ends_stopped(slurm, tmp_path: Path):
    # One process per node: stopping is the nodes' and the script's (two per node trained above).
    flags = slurm.submit_flags(processes_per_node=1)
    sent = slurm.smdist("submit", str(_long_job(tmp_path)), *flags)
    assert sent.returncode == 0, sent.stderr
    name = _job_name(sent)
    for node in ("node1", "node2"):  # both scripts listen for SIGTERM
        slurm.wait_for_output(name, f"{node} | running")
    stopped = slurm.smdist("stop", name, "--root", str(slurm.root), "--wait", "--poll", "1")
    assert stopped.returncode == 0, stopped.stderr
    assert "stop requested: SIGTERM to Slurm job" in stopped.stderr
    assert "after SIGTERM: scancel" not in stopped.stderr  # SIGTERM was enough: no scancel
    assert f"{name}: Stopped: a stop was asked for (smdist stop)" in stopped.stderr
    status = slurm.smdist("status", name, "--root", str(slurm.root))
    assert status.returncode == 1
    assert status.stdout.split("\t")[:2] == [name, "Stopped"]
    logs = slurm.smdist("logs", name, "--root", str(slurm.root)).stdout
    for node in ("node1", "node2"):  # SIGTERM reached the script on every node; it exited 143
        assert f"{node} | stopped by SIGTERM at step=" in logs, logs
    again = slurm.smdist("stop", name, "--root", str(slurm.root))
    assert "already Stopped; nothing to stop" in again.stderr
