"""``smdist submit`` and ``smdist tune`` say what the job or search may cost before sending it
(on stderr, as ``plan`` computes it), ``--dry-run`` included; stdout stays the request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

import smdist

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ACCOUNT = ["--bucket", "my-bucket", "--role", "arn:aws:iam::123456789012:role/SageMaker",
           "--region", "us-east-1"]  # fmt: skip


def smdist_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", *args],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
    )  # fmt: skip


def cost_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("cost: ")]


def test_submit_dry_run_shows_the_cost_per_hour_and_up_to_max_run():
    job = EXAMPLES / "pytorch_ddp.yaml"
    cost = smdist.plan(job).cost
    shown = smdist_cli("submit", str(job), "--dry-run", *ACCOUNT)
    assert shown.returncode == 0, shown.stderr
    json.loads(shown.stdout)  # the request alone on stdout
    assert cost_lines(shown.stderr) == [
        f"cost: ${cost.per_hour:,.2f}/hour (2 x ml.g5.xlarge), at most ${cost.max_run:,.2f} if "
        f"it runs to max_run (3600 s); {cost.region} on-demand prices"
    ]


def test_tune_dry_run_shows_the_cost_of_the_trials_at_a_time_and_of_them_all(tmp_path):
    job = EXAMPLES / "tuning" / "pytorch_ddp.yaml"
    data = yaml.safe_load(job.read_text())
    data["tuning"].update(max_jobs=6, max_parallel_jobs=3)
    data["max_run"] = 7200
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump(data))
    cost = smdist.plan(path).cost
    shown = smdist_cli("tune", str(path), "--dry-run", *ACCOUNT)
    assert shown.returncode == 0, shown.stderr
    json.loads(shown.stdout)
    [line] = cost_lines(shown.stderr)
    cluster = data["cluster"]
    assert line == (
        f"cost: ${cost.per_hour:,.2f}/hour per trial ({cluster['instance_count']} x "
        f"{cluster['instance_type']}), ${cost.per_hour * 3:,.2f}/hour with 3 at a time; at most "
        f"${cost.max_run * 6:,.2f} if all 6 trials run to max_run (7200 s); {cost.region} "
        "on-demand prices"
    )


def test_a_local_mode_dry_run_shows_no_cost_it_runs_on_this_machine():
    shown = smdist_cli(
        "submit", str(EXAMPLES / "pytorch_ddp.yaml"), "--dry-run", "--backend", "sagemaker-local"
    )
    assert shown.returncode == 0, shown.stderr
    assert "code: " in shown.stderr and cost_lines(shown.stderr) == []
