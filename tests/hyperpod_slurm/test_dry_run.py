"""Every example's dry run on hyperpod-slurm: an sbatch script that bash reads and whose
``#SBATCH`` lines the test Slurm's ``sbatch --test-only`` accepts, nothing written or started;
or, for a strategy this backend does not run, exit 2 saying why."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from slurm_stand import REPO

EXAMPLES = sorted((REPO / "examples").rglob("*.yaml"))
RUN_HERE = {"pytorch_ddp.yaml", "pytorch_ddp_torch_distributed.yaml", "smp_v2.yaml"}


def _squeue(slurm) -> list[str]:
    return slurm.stand.run("squeue", "-h", "-o", "%i").stdout.split()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: str(path.relative_to(REPO)))
def test_every_examples_dry_run_is_a_script_slurm_accepts_or_a_refusal_saying_why(
    slurm, example: Path, tmp_path: Path
):
    jobs_before = _squeue(slurm)
    job_root = tmp_path / "fsx"
    shown = slurm.smdist(
        "submit", str(example), "--backend", "hyperpod-slurm", "--dry-run",
        "--job-root", str(job_root), "--root", str(tmp_path / "records"),
    )  # fmt: skip
    assert not job_root.exists() and not (tmp_path / "records").exists()  # nothing written
    assert _squeue(slurm) == jobs_before  # nothing submitted
    if example.name not in RUN_HERE:
        assert shown.returncode == 2, shown.stderr
        assert "strategy.kind: does not run on hyperpod-slurm" in shown.stderr
        assert "Traceback" not in shown.stderr
        return
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("#!/bin/bash\n")
    script = tmp_path / "job.sbatch"
    script.write_text(shown.stdout)
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    accepted = slurm.stand.run("sbatch", "--test-only", str(script))
    assert accepted.returncode == 0, accepted.stderr
    assert "to start at" in accepted.stderr
    assert _squeue(slurm) == jobs_before
