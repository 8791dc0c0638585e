"""A job file from ``smdist init`` runs as written: ``smdist run`` trains it to completion."""

from __future__ import annotations

import pytest
from local_jobs import assert_nothing_left, smdist_cli, smdist_run

pytestmark = [pytest.mark.integration, pytest.mark.torch]


def test_the_pytorch_ddp_starter_runs_to_completion_as_written(tmp_path):
    written = smdist_cli(tmp_path, "init", "pytorch_ddp")
    assert written.returncode == 0, written.stderr
    run = smdist_run(tmp_path / "pytorch_ddp.yaml", tmp_path, timeout=180)
    assert run.returncode == 0, run.output
    assert "[metrics] step=20 " in run.output  # its max_steps, logged every 5
    assert (run.job_dir() / "output" / "model.tar.gz").is_file()
    assert_nothing_left(tmp_path)
