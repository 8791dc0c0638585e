"""SageMaker's training toolkit (in the stand-in DLC's Python) run for several emulated hosts
from one interpreter: what a container computes from each host's config files.

The toolkit reads ``SAGEMAKER_BASE_DIR`` when ``sagemaker_training.environment`` is imported,
so each host gets a forked child that sets it and only then imports the toolkit, as a fresh
container's process does. The parent loads only the toolkit's third-party libraries (boto3,
paramiko: most of its import time), once for every host.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

DRIVER = """
import json, os, sys, traceback
import boto3, paramiko  # noqa: F401 (loaded once; no sagemaker module is imported here)

code, argv, hosts = json.loads(sys.stdin.read())
for base, out in hosts:
    pid = os.fork()
    if pid == 0:
        os.environ["SAGEMAKER_BASE_DIR"] = base
        os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        sys.argv = ["-c", *argv]
        try:
            exec(compile(code, "<toolkit>", "exec"), {"__name__": "__main__"})
            sys.stdout.flush()
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        sys.exit(f"{base}: the toolkit's code failed (wait status {status})")
"""


def toolkit_per_host(
    python: Path,
    code: str,
    bases: Sequence[Path],
    environ: dict[str, str],
    scratch: Path,
    argv: Sequence[str] = (),
) -> dict[Path, dict]:
    """``code`` (which prints a JSON object on its last line) run by the toolkit's ``python``
    for each host folder of ``bases`` as SAGEMAKER_BASE_DIR, with ``environ`` and ``argv``;
    the objects by folder. Each host's output goes to a file in ``scratch``."""
    outputs = {base: scratch / f"toolkit-{index}.out" for index, base in enumerate(bases)}
    hosts = [[str(base), str(out)] for base, out in outputs.items()]
    done = subprocess.run(
        [str(python), "-c", DRIVER],
        input=json.dumps([code, list(argv), hosts]),
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    return {base: json.loads(out.read_text().splitlines()[-1]) for base, out in outputs.items()}
