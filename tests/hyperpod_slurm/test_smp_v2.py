"""SMP v2's example on the test Slurm: SageMaker's torchrun runner on every node (static
rendezvous on the first node, this node's rank), the SMP parameters fitted to the nodes'
processes, the model sharded and trained."""

from __future__ import annotations

from slurm_stand import REPO

EXAMPLE = REPO / "examples" / "smp_v2.yaml"


def test_the_smp_v2_example_runs_torchrun_on_every_node(slurm, tmp_path):
    job = tmp_path / "smp_v2.yaml"
    job.write_text(EXAMPLE.read_text().replace("epochs: 2", "epochs: 1"))
    sent = slurm.smdist("submit", str(job), *slurm.submit_flags(), "--wait")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "mp_parameters.hybrid_shard_degree: 8 -> 4" in sent.stderr  # 2 nodes x 2 processes
    name = sent.stdout.splitlines()[0]
    logs = slurm.smdist("logs", name, "--root", str(slurm.root)).stdout
    for rank, node in enumerate(("node1", "node2")):
        started = f"{node} | smdist-node: {node} (node {rank + 1} of 2): "
        line = next(line for line in logs.splitlines() if line.startswith(started))
        assert "-m torch.distributed.run --nnodes 2 --nproc_per_node 2 --master_addr node1" in line
        assert f"--node_rank {rank} pytorch_smp_v2.py" in line
    assert (slurm.job_root / name / "model" / "model.pt").is_file()
