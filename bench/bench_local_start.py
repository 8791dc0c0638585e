"""How long the local backend takes to reach the first training step, against bare torchrun.

Prints, in one run, the median time from starting the command to the first training step
(the ``[metrics] step=1`` line of the ready DDP entry point) of a 2-host DDP job through
``smdist run`` (2 emulated hosts x 1 process: planning, host directories, code staging and
the launch the container would do) in both of the strategy's launcher modes:

- ``examples/pytorch_ddp_torch_distributed.yaml``: SageMaker's torch_distributed launcher,
  torchrun on each host with a static rendezvous;
- ``examples/pytorch_ddp.yaml`` with ``max_restarts: 0``: smdist's torchrun launcher, one
  launcher process per host that starts torchrun with a static rendezvous (on the second
  host once the first host's store answers);
- the same with ``--no-namespaces``, for reference: hosts sharing this machine, what the
  namespaces of real hosts cost;
- ``examples/pytorch_ddp.yaml`` as shipped (``max_restarts: 1``): the same launcher with the
  c10d rendezvous that restarts need. The host that joins c10d first polls it once a second,
  so this mode starts about a second later by torch's design; it is printed for reference;

against bare ``torchrun --nnodes 1 --nproc_per_node 2`` of the same script, and the ratios
(targets: <= 1.10 for smdist's launcher, <= 1.15 for torch_distributed). For reference it
also times bare torchrun as two nodes of one process each
(two torchrun processes on this machine: what emulating two hosts costs before smdist adds
anything). Where two torchruns meet, the one that reaches the store before it is served backs
off 250-750 ms (torch's connect retry): bare torchrun on two nodes meets that on about half of
its starts; smdist's launcher, and the local backend for SageMaker's own torchrun command,
start torchrun on the second host once the first host's store answers. The commands run in
turn, repeatedly, so that a busy machine slows all alike. Bytecode is cached for every side,
as after ``pip install`` (smdist's runtime, copied into each host, gets that bytecode too).
Every run starts fresh, so each trains from step 1: smdist runs with ``--fresh`` (the earlier
runs' checkpoints are set aside, not restored; checkpoints are synced while it runs as in any
local job), bare torchrun in a new working directory (the entry point keeps ./checkpoints
there).

Run: python bench/bench_local_start.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "entry_points" / "pytorch_ddp.py"
FIRST_STEP = "[metrics] step=1 "
STARTED = "[train] running"  # smdist's line once every host process has been started
HYPERPARAMETERS = {"epochs": 1, "max_steps": 1, "log_every": 1, "samples": 256, "batch_size": 16}
_FOREIGN = ("SM_", "SMDIST_", "TF_CONFIG", "OMPI_", "PMIX_", "HOROVOD_", "TORCHELASTIC_")


def environment() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    # torch's bytecode is on disk already; smdist's must be too, as after pip install.
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    environ["PYTHONUNBUFFERED"] = "1"
    return environ


def timed_run(command: list[str], cwd: Path, timeout: float = 300) -> tuple[float, float | None]:
    """Run ``command``: seconds until its first training step, and until smdist reports the
    hosts started (None for torchrun)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    seen: list[str] = []
    first_step = started = None
    try:
        for raw in iter(process.stdout.readline, b""):
            line = raw.decode(errors="replace")
            seen.append(line)
            now = time.perf_counter() - start
            if first_step is None and FIRST_STEP in line:
                first_step = now
            if started is None and STARTED in line:
                started = now
            if now > timeout:
                break
        process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if first_step is None or process.returncode != 0:
        raise RuntimeError(f"{command[:5]} failed (rc {process.returncode}):\n{''.join(seen)}")
    return first_step, started


def smdist_command(job_file: Path, root: Path, *extra: str) -> list[str]:
    # --fresh: the examples keep checkpoints, and every run must train from step 1 (without
    # it the second run resumes from the first's last checkpoint and takes no step at all).
    command = [sys.executable, "-m", "smdist.cli.app", "run", str(job_file), "--fresh", *extra]
    command += ["--hosts", "2", "--processes-per-host", "1", "--root", str(root)]
    for name, value in HYPERPARAMETERS.items():
        command += ["-H", f"{name}={value}"]
    return command


def torchrun_command(nodes: int = 1, node_rank: int = 0, port: int = 0) -> list[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes)]
    command += ["--nproc_per_node", str(2 // nodes)]
    if nodes > 1:
        command += ["--node_rank", str(node_rank), "--master_addr", "127.0.0.1"]
        command += ["--master_port", str(port)]
    command.append(str(SCRIPT))
    for name, value in HYPERPARAMETERS.items():
        command += [f"--{name}", str(value)]
    return command


def without_restarts(example: Path, directory: Path) -> Path:
    """A copy of ``example`` with ``strategy.max_restarts`` 0."""
    spec = yaml.safe_load(example.read_text())
    spec["strategy"]["max_restarts"] = 0
    copy = directory / f"{example.stem}_no_restarts.yaml"
    copy.write_text(yaml.safe_dump(spec, sort_keys=False))
    return copy


def two_node_run(cwd: Path) -> tuple[float, None]:
    """Bare torchrun as two single-process nodes; the second node runs beside the timed one."""
    with socket.socket() as sock:
        sock.bind(("", 0))
        port = sock.getsockname()[1]
    second = subprocess.Popen(
        torchrun_command(2, 1, port),
        cwd=cwd,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        return timed_run(torchrun_command(2, 0, port), cwd)[0], None
    finally:
        try:
            second.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait()


def fresh_dir(work: Path) -> Path:
    """A new working directory for one bare torchrun job: the entry point keeps checkpoints
    in ./checkpoints there, which a later run would otherwise resume from."""
    return Path(tempfile.mkdtemp(prefix="run-", dir=work))


def _runs(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smdist-bench-") as scratch:
        work = Path(scratch)
        root = work / ".smdist"
        examples = ROOT / "examples"
        static_job = without_restarts(examples / "pytorch_ddp.yaml", work)
        cases = {
            "torchrun --nnodes 1 --nproc_per_node 2": lambda: timed_run(
                torchrun_command(), fresh_dir(work)
            ),
            "smdist run, torch_distributed launcher": lambda: timed_run(
                smdist_command(examples / "pytorch_ddp_torch_distributed.yaml", root), work
            ),
            "smdist run, smdist launcher": lambda: timed_run(
                smdist_command(static_job, root), work
            ),
            "smdist run, smdist launcher, shared hosts": lambda: timed_run(
                smdist_command(static_job, root, "--no-namespaces"), work
            ),
            "smdist run, smdist launcher + restarts": lambda: timed_run(
                smdist_command(examples / "pytorch_ddp.yaml", root), work
            ),
            "torchrun, 2 nodes x 1 (reference)": lambda: two_node_run(fresh_dir(work)),
        }
        for case in cases.values():  # warm-up: the first start of torch reads it from disk
            case()
        first_steps: dict[str, list[float]] = {name: [] for name in cases}
        smdist_own: list[float] = []
        for _ in range(args.repeats):
            for name, case in cases.items():
                first_step, started = case()
                first_steps[name].append(first_step)
                if started is not None:
                    smdist_own.append(started)
    medians = {name: statistics.median(values) for name, values in first_steps.items()}
    baseline = medians["torchrun --nnodes 1 --nproc_per_node 2"]
    print(f"time to first training step, median of {args.repeats} (cpus: {os.cpu_count()})")
    for name, values in first_steps.items():
        print(f"  {name:40s} {medians[name]:6.2f} s  (runs: {_runs(values)})")
    print(f"  smdist itself, until the hosts start     {statistics.median(smdist_own):6.2f} s")
    for name in cases:
        if name.startswith("smdist"):
            ratio = medians[name] / baseline
            if name.endswith("restarts"):
                note = "c10d, for reference"
            elif name.endswith("shared hosts"):
                note = "no namespaces, for reference"
            elif name.endswith("smdist launcher"):
                note = "target <= 1.10"
            else:
                note = "target <= 1.15"
            print(f"  ratio {name[len('smdist run, ') :]:34s} {ratio:6.2f}  ({note})")


if __name__ == "__main__":
    main()
