"""Run a script on a few real gloo ranks (torchrun, one machine) and collect what each saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_ranks(script: str, tmp_path: Path, world: int = 4) -> dict[int, dict]:
    """``script`` on ``world`` ranks; it gets ``tmp_path`` as its argument and writes
    ``rank<r>.json`` there. Launcher variables of an enclosing job are left out."""
    path = tmp_path / "worker.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "OMPI_", "PMI"))}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += [f"--nproc-per-node={world}", str(path), str(tmp_path)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {rank: json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(world)}
