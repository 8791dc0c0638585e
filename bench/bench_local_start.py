"""How long the local backend takes to reach the first training step, against bare torchrun.

Prints, in one run, the median time from starting the command to the first training step
(the ``[metrics] step=1`` line of the ready DDP entry point) of:

- ``smdist run examples/pytorch_ddp.yaml``: 2 emulated hosts x 1 process (planning, host
  directories, code staging, the torchrun launcher on each host, a c10d rendezvous across
  hosts), and
- ``torchrun --nnodes 1 --nproc_per_node 2`` of the same script,

and their ratio (target <= 1.15). For reference it also times bare torchrun as two nodes of one
process each (two torchrun launchers on this machine, which is what emulating two hosts costs
before smdist adds anything). Runs alternate so that a busy machine slows all alike.

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

ROOT = Path(__file__).resolve().parent.parent
FIRST_STEP = "[metrics] step=1 "
STARTED = "[train] running"  # smdist's line once every host process has been started
HYPERPARAMETERS = {"epochs": 1, "max_steps": 1, "log_every": 1, "samples": 256, "batch_size": 16}
_FOREIGN = ("SM_", "SMDIST_", "TF_CONFIG", "OMPI_", "PMIX_", "HOROVOD_", "TORCHELASTIC_")


def environment() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    environ["PYTHONUNBUFFERED"] = "1"
    return environ


def seconds_to_first_step(
    command: list[str], cwd: Path, timeout: float = 300
) -> tuple[float, float | None]:
    """Start ``command``; seconds until it prints the first step's metric line, and until
    smdist says the hosts were started (None for torchrun)."""
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
    elapsed = started = None
    try:
        for raw in iter(process.stdout.readline, b""):
            line = raw.decode(errors="replace")
            seen.append(line)
            if elapsed is None and FIRST_STEP in line:
                elapsed = time.perf_counter() - start
            if started is None and STARTED in line:
                started = time.perf_counter() - start
            if time.perf_counter() - start > timeout:
                break
        process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if elapsed is None or process.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed (rc {process.returncode}):\n{''.join(seen)}")
    return elapsed, started


def smdist_command(root: Path) -> list[str]:
    command = [sys.executable, "-m", "smdist.cli", "run", str(ROOT / "examples/pytorch_ddp.yaml")]
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
    command.append(str(ROOT / "entry_points/pytorch_ddp.py"))
    for name, value in HYPERPARAMETERS.items():
        command += [f"--{name}", str(value)]
    return command


def two_node_seconds(cwd: Path) -> float:
    """Bare torchrun as two single-process nodes: the second node runs beside the timed one."""
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
        return seconds_to_first_step(torchrun_command(2, 0, port), cwd)[0]
    finally:
        try:
            second.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    smdist_times, torchrun_times, own_times, two_node_times = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="smdist-bench-") as scratch:
        work = Path(scratch)
        # One warm-up each: the first start of torch reads its files from disk.
        seconds_to_first_step(torchrun_command(), work)
        seconds_to_first_step(smdist_command(work / ".smdist"), work)
        for _ in range(args.repeats):
            torchrun_times.append(seconds_to_first_step(torchrun_command(), work)[0])
            first_step, started = seconds_to_first_step(smdist_command(work / ".smdist"), work)
            smdist_times.append(first_step)
            own_times.append(started or 0.0)
            two_node_times.append(two_node_seconds(work))
    smdist_median = statistics.median(smdist_times)
    torchrun_median = statistics.median(torchrun_times)
    own_median = statistics.median(own_times)
    print(f"time to first training step, median of {args.repeats} (cpus: {os.cpu_count()})")
    print(f"  smdist run, 2 emulated hosts x 1 process : {smdist_median:6.2f} s  "
          f"(runs: {', '.join(f'{t:.2f}' for t in smdist_times)})")  # fmt: skip
    print(f"    of which smdist until the hosts start  : {own_median:6.2f} s")
    print(f"  torchrun --nnodes 1 --nproc_per_node 2   : {torchrun_median:6.2f} s  "
          f"(runs: {', '.join(f'{t:.2f}' for t in torchrun_times)})")  # fmt: skip
    two_node_median = statistics.median(two_node_times)
    print(f"  torchrun, 2 nodes x 1 process (reference): {two_node_median:6.2f} s  "
          f"(runs: {', '.join(f'{t:.2f}' for t in two_node_times)})")  # fmt: skip
    ratio = smdist_median / torchrun_median
    print(f"  ratio smdist / torchrun 1 node x 2       : {ratio:6.2f}  (target <= 1.15)")
    print(f"  ratio smdist / torchrun 2 nodes x 1      : {smdist_median / two_node_median:6.2f}")


if __name__ == "__main__":
    main()
