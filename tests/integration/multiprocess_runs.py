"""Start entry points as real processes for the integration tests, and read what they print.

Every process gets a clean environment (no TF_CONFIG, SM_*, Horovod or Open MPI variables
inherited from the shell running pytest), writes its output to a file (a full pipe would block
it) and is killed, with its process group, if it outlives its timeout.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from smdist.packaging.bundle import entry_points_dir

# The installed package's ready scripts (the source tree's under an editable install): a run
# against an installed wheel (.ci/wheel-check) exercises the wheel's own files.
ENTRY_POINTS = entry_points_dir()
PYTHON = sys.executable
VENV_BIN = Path(PYTHON).parent

_INHERITED_PREFIXES = ("SM_", "SMDIST_", "TF_CONFIG", "HOROVOD_", "OMPI_", "PMIX_", "NSS_WRAPPER")
_METRICS = re.compile(r"\[metrics\](?P<body>.*)$")
_METRIC_VALUE = re.compile(r"(\w+)=([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))")
_WEIGHTS = re.compile(r"smdist: rank=(?P<rank>\d+) weights_checksum=(?P<sha>[0-9a-f]{16})")


def clean_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_INHERITED_PREFIXES) and name != "LD_PRELOAD"
    }
    environ["PATH"] = f"{VENV_BIN}{os.pathsep}{environ.get('PATH', '')}"
    environ["PYTHONUNBUFFERED"] = "1"
    environ.update(extra or {})
    return environ


@dataclass
class Run:
    """One started process; ``wait`` returns its exit code, ``output`` what it printed."""

    process: subprocess.Popen
    log: Path

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"process {self.process.args} ran past {timeout} s; its output:\n{self.output}"
            ) from None

    def kill(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=30)

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def start(
    command: Sequence[str], log: Path, environ: Mapping[str, str], cwd: Path | None = None
) -> Run:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as handle:
        # Own process group: a timeout kills launchers (horovodrun) together with their ranks.
        process = subprocess.Popen(
            list(command),
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=dict(environ),
            cwd=cwd or log.parent,
            start_new_session=True,
        )
    return Run(process=process, log=log)


def wait_all(runs: Sequence[Run], timeout: float) -> list[int]:
    """Wait for every run under one deadline; kill them all if any is late."""
    deadline = time.monotonic() + timeout
    try:
        return [run.wait(max(deadline - time.monotonic(), 0.1)) for run in runs]
    finally:
        for run in runs:
            run.kill()


def wait_for(condition: Callable[[], bool], timeout: float, what: str, runs: Sequence[Run]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if all(run.process.poll() is not None for run in runs):
            break
        time.sleep(0.05)
    outputs = "\n".join(f"--- {run.log}:\n{run.output}" for run in runs)
    for run in runs:
        run.kill()
    raise AssertionError(f"timed out waiting for {what}; outputs:\n{outputs}")


def metric_lines(output: str) -> list[dict[str, float]]:
    """The values of every metric line, in order.

    Only ``name=number`` pairs count: launchers that tag output per write (mpirun
    --tag-output) may glue a tag onto the end of a line.
    """
    lines = []
    for line in output.splitlines():
        match = _METRICS.search(line)
        if match:
            pairs = _METRIC_VALUE.findall(match.group("body"))
            lines.append({name: float(raw) for name, raw in pairs})
    return lines


def weight_checksums(output: str) -> dict[int, str]:
    return {int(m.group("rank")): m.group("sha") for m in _WEIGHTS.finditer(output)}


def describe(runs: Sequence[Run]) -> str:
    return "\n".join(f"--- {run.log} (rc {run.process.returncode}):\n{run.output}" for run in runs)


def sagemaker_host(base: Path, hosts: Sequence[str], current_host: str) -> dict[str, str]:
    """The SM_* variables of one emulated host, its opt/ml folders created under ``base``."""
    import json

    model_dir = base / "model"
    output_dir = base / "output" / "data"
    for folder in (model_dir, output_dir, base / "checkpoints"):
        folder.mkdir(parents=True, exist_ok=True)
    return {
        "SM_HOSTS": json.dumps(list(hosts)),
        "SM_CURRENT_HOST": current_host,
        "SM_NUM_GPUS": "0",
        "SM_NUM_CPUS": str(os.cpu_count() or 1),
        "SM_MODEL_DIR": str(model_dir),
        "SM_OUTPUT_DATA_DIR": str(output_dir),
        "SM_CHANNELS": "[]",
    }


# Horovod's launcher reaches other hosts with `ssh [-o opt]... host [-p port] [-o opt] command`;
# this stand-in runs the command here, so "hosts" that are loopback addresses of this machine
# behave like separate machines sharing its file system.
_SSH_STAND_IN = """#!/bin/sh
host=""
while [ $# -gt 0 ]; do
    case "$1" in
        -o|-p|-i|-l|-F) shift 2 ;;
        -*) shift ;;
        *) if [ -z "$host" ]; then host="$1"; shift; else break; fi ;;
    esac
done
exec /bin/sh -c "$*"
"""


def ssh_stand_in(directory: Path) -> Path:
    """A folder holding an ``ssh`` that runs commands locally; put it first on PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "ssh"
    script.write_text(_SSH_STAND_IN)
    script.chmod(0o755)
    return directory


def rank_processes(launcher: Run, script: Path) -> dict[int, int]:
    """{Horovod rank: pid} of the launcher's processes running ``script``."""
    import psutil

    found = {}
    for child in psutil.Process(launcher.process.pid).children(recursive=True):
        try:
            if str(script) in " ".join(child.cmdline()):
                rank = child.environ().get("HOROVOD_RANK")
                if rank is not None and child.name().startswith("python"):
                    found[int(rank)] = child.pid
        except psutil.Error:
            continue
    return found
