"""The smdist command as a user's shell runs it: a real subprocess of this Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COMMAND = [sys.executable, "-m", "smdist.cli.app"]
NO_AWS_FILE = "/nonexistent/aws-config"


def run_smdist(
    *args: str,
    cwd: Path | None = None,
    without_aws: bool = False,
    path: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``smdist ARGS`` in ``cwd``; ``without_aws``: no AWS, SageMaker or smdist settings at all,
    so a refusal must come before any AWS call could be tried; ``path``: its PATH."""
    environ = dict(os.environ)
    if without_aws:
        environ = {k: v for k, v in environ.items() if not k.startswith(("AWS_", "SM_", "SMDIST"))}
        environ["AWS_CONFIG_FILE"] = environ["AWS_SHARED_CREDENTIALS_FILE"] = NO_AWS_FILE
    if path is not None:
        environ["PATH"] = path
    return subprocess.run(
        [*COMMAND, *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout
    )
