"""Throughput of the ready PyTorch entry points against a hand-written loop on the same device.

On the device it finds (the first CUDA GPU, else the CPU, with a line saying so and smaller
defaults), each ready PyTorch entry point that trains the MLP on synthetic data is started as
shipped, as one process: ``pytorch_ddp.py``, ``pytorch_sddp.py`` (DDP on smdist's stand-in
``smddp`` backend) and ``pytorch_smp_v2.py`` (FSDP, bf16 parameters; one full replica) under
``torchrun --nproc_per_node 1``; ``pytorch_smp_v1.py`` (smdist's SMP v1 stand-in, one
microbatch) and ``pytorch_horovod.py`` (where horovod is installed; skipped, and said so,
where not) as a plain ``python``, their single-process path. The TensorFlow entry points are
not PyTorch.

The baseline is a loop in this script: the same MLP (``build_classifier``), SGD with momentum
0.9, the precision the entry points choose (bf16 autocast and TF32 on GPUs that have them, fp32
on CPUs), the same batch size and synthetic data, the data resident on the device and each
batch indexed from a per-epoch permutation. It runs before and after the entry points; a second
baseline wraps the model in DDP over a one-rank process group, to tell what DDP itself costs
(the table's last column relates every run to it).

Every run takes the same number of steps: windows of ``log_every`` steps, each ending with the
device synchronised (the entry points' ``[metrics]`` lines read the loss there), the first
``--warmup_windows`` dropped; samples/s is the median of the other windows. ``--seconds`` sets
the timed seconds per run at the baseline's speed (a slower entry point runs longer). Target:
entry point / baseline >= 0.9 on an H100 or H200. The defaults finish within about 4 minutes
on one H100 and a few minutes on a 2-core CPU.

    python bench/bench_gpu.py [--seconds 6] [--batch_size 1024] [--only pytorch_ddp]

Not a test: figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

METRICS = re.compile(r"\[metrics\] step=(\d+) .*samples_per_sec=([0-9.eE+-]+)")
LEARNING_RATE = 0.01
SEED = 42


@dataclass(frozen=True)
class EntryPoint:
    name: str
    launcher: str  # "torchrun" (one process) or "python" (the script's single-process path)
    env: tuple[tuple[str, str], ...] = ()
    needs: str | None = None  # a module that must be importable


ENTRY_POINTS = (
    EntryPoint("pytorch_ddp", "torchrun"),
    EntryPoint("pytorch_sddp", "torchrun"),
    EntryPoint(
        "pytorch_smp_v2", "torchrun", (("SM_HP_MP_PARAMETERS", '{"hybrid_shard_degree": 1}'),)
    ),
    EntryPoint("pytorch_smp_v1", "python", (("SM_HP_MP_PARAMETERS", '{"microbatches": 1}'),)),
    EntryPoint("pytorch_horovod", "python", needs="horovod"),
)


@dataclass(frozen=True)
class Workload:
    samples: int
    batch_size: int
    hidden_size: int
    log_every: int
    windows: int  # timed windows
    warmup_windows: int

    @property
    def steps(self) -> int:
        return self.log_every * (self.warmup_windows + self.windows)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the baseline -------------------------------------------------------------------------


def baseline(device, workload: Workload, ddp: bool = False) -> list[float]:
    """samples/s of each timed window of the hand-written loop."""
    import torch
    import torch.nn.functional as F

    from smdist.runtime.torch_training import (
        build_classifier,
        choose_precision,
        synthetic_classification,
    )

    torch.manual_seed(SEED)
    x, y = synthetic_classification(workload.samples, seed=SEED).tensors
    x, y = x.to(device), y.to(device)
    model = build_classifier(x.shape[1], int(y.max()) + 1, workload.hidden_size).to(device)
    if ddp:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)
    precision = choose_precision(device, True)
    scaler = precision.grad_scaler()
    batch, per_epoch = workload.batch_size, workload.samples // workload.batch_size

    def step(inputs, targets):
        optimizer.zero_grad(set_to_none=True)
        with precision.autocast():
            loss = F.cross_entropy(model(inputs), targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss

    def synchronise(loss) -> None:
        float(loss.detach())  # as a metric line reads the loss: the window has finished

    rates, order, loss = [], None, None
    started = time.perf_counter()
    for index in range(workload.steps):
        position = index % per_epoch
        if position == 0:
            order = torch.randperm(workload.samples, device=device)
        rows = order[position * batch : (position + 1) * batch]
        loss = step(x[rows], y[rows])
        if (index + 1) % workload.log_every == 0:
            synchronise(loss)
            now = time.perf_counter()
            if (index + 1) // workload.log_every > workload.warmup_windows:
                rates.append(batch * workload.log_every / (now - started))
            started = now
    return rates


def ddp_baseline(device, workload: Workload) -> list[float]:
    """The baseline with the model wrapped in DDP over a one-rank process group."""
    import torch.distributed as dist

    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1
    )
    try:
        return baseline(device, workload, ddp=True)
    finally:
        dist.destroy_process_group()


def calibrate(device, batch_size: int, hidden_size: int, samples: int) -> float:
    """Steps per second of the baseline, after a warm-up, from a short probe.

    The fastest window counts: on a busy machine a slow moment would make every window short.
    """
    probe = Workload(samples, batch_size, hidden_size, log_every=20, windows=4, warmup_windows=2)
    return max(baseline(device, probe)) / batch_size


# --- the entry points ---------------------------------------------------------------------


def entry_point_rates(entry: EntryPoint, workload: Workload, timeout: float) -> list[float]:
    """samples/s of each timed window of one entry point's run, from its metric lines."""
    script = REPO / "entry_points" / f"{entry.name}.py"
    hyperparameters = {
        "epochs": 1_000_000,  # max_steps ends the run
        "max_steps": workload.steps,
        "samples": workload.samples,
        "batch_size": workload.batch_size,
        "hidden_size": workload.hidden_size,
        "learning_rate": LEARNING_RATE,
        "seed": SEED,
        "log_every": workload.log_every,
        "checkpoint_every": 0,
    }
    args = [item for name, value in hyperparameters.items() for item in (f"--{name}", str(value))]
    if entry.launcher == "torchrun":
        command = [
            sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
            "--nproc_per_node", "1", "--master_addr", "127.0.0.1",
            "--master_port", str(free_port()), str(script), *args,
        ]  # fmt: skip
    else:
        command = [sys.executable, str(script), *args]
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as scratch:
        env = {key: value for key, value in os.environ.items() if not key.startswith("SM_")}
        for key in ("SMDIST_CHECKPOINT_DIR", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"):
            env.pop(key, None)
        env.update(
            {
                "SM_MODEL_DIR": str(Path(scratch) / "model"),
                "SMDIST_CHECKPOINT_DIR": str(Path(scratch) / "checkpoints"),
                "MASTER_PORT": str(free_port()),
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
                **dict(entry.env),
            }
        )
        result = subprocess.run(
            command, env=env, cwd=scratch, capture_output=True, text=True, timeout=timeout
        )
    output = result.stdout + result.stderr
    lines = [(int(step), float(rate)) for step, rate in METRICS.findall(output)]
    if result.returncode != 0 or not lines:
        tail = "\n".join(output.splitlines()[-15:])
        raise RuntimeError(f"exit {result.returncode}:\n{tail}")
    # One line per window, then the run's summary line (dropped); the first windows warm up.
    windows = [rate for step, rate in lines[:-1] if step % workload.log_every == 0]
    return windows[workload.warmup_windows :]


# --- the report ---------------------------------------------------------------------------


def describe_device():
    import torch

    if torch.cuda.is_available():
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        name = f"{torch.cuda.get_device_name(device)} (CUDA)"
        return device, name
    return torch.device("cpu"), f"CPU, {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, help="timed seconds per run (GPU 6, CPU 3)")
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--hidden_size", type=int, default=128)
    parser.add_argument("--samples", type=int, help="synthetic samples (GPU 2**20, CPU 2**15)")
    parser.add_argument("--windows", type=int, default=5, help="timed windows per run")
    parser.add_argument("--warmup_windows", type=int, default=2)
    parser.add_argument("--steps", type=int, help="steps per window (default: from --seconds)")
    parser.add_argument(
        "--only", action="append", help="entry points to run (repeatable; default: all)"
    )
    options = parser.parse_args()

    import torch

    from smdist.runtime.torch_training import choose_precision

    device, device_name = describe_device()
    on_gpu = device.type == "cuda"
    if not on_gpu:
        print("no CUDA device: running on the CPU with small defaults (fp32)")
    seconds = options.seconds or (6.0 if on_gpu else 3.0)
    samples = options.samples or (2**20 if on_gpu else 2**15)
    batch_size = options.batch_size

    steps_per_second = calibrate(device, batch_size, options.hidden_size, samples)
    log_every = options.steps or max(10, round(steps_per_second * seconds / options.windows))
    workload = Workload(
        samples, batch_size, options.hidden_size, log_every, options.windows, options.warmup_windows
    )
    precision = choose_precision(device, True).describe()
    print(f"device: {device_name}; torch {torch.__version__}; {precision}")
    print(
        f"MLP hidden {workload.hidden_size}, batch {batch_size}, {samples} synthetic samples; "
        f"{workload.warmup_windows} + {workload.windows} windows of {log_every} steps per run, "
        "warm-up windows dropped, median of the rest\n",
        flush=True,
    )

    results: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}
    first = baseline(device, workload)
    print(f"  baseline: {statistics.median(first):12,.0f} samples/s", flush=True)
    results["baseline (DDP, 1 rank)"] = ddp_baseline(device, workload)
    print(
        f"  baseline (DDP, 1 rank): {statistics.median(results['baseline (DDP, 1 rank)']):12,.0f}"
        " samples/s",
        flush=True,
    )
    # A slower entry point runs longer: allow for one eight times slower than the baseline.
    timeout = 120 + 8 * workload.steps / steps_per_second
    for entry in ENTRY_POINTS:
        if options.only and entry.name not in options.only:
            continue
        if entry.needs and importlib.util.find_spec(entry.needs) is None:
            skipped[entry.name] = f"{entry.needs} is not installed"
            continue
        started = time.perf_counter()
        try:
            results[entry.name] = entry_point_rates(entry, workload, timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            skipped[entry.name] = f"failed: {error}"
            print(f"  {entry.name}: failed", flush=True)
            continue
        print(
            f"  {entry.name}: {statistics.median(results[entry.name]):12,.0f} samples/s "
            f"({time.perf_counter() - started:.0f} s with start-up)",
            flush=True,
        )
    results = {"baseline": first + baseline(device, workload), **results}

    base = statistics.median(results["baseline"])
    ddp_base = statistics.median(results["baseline (DDP, 1 rank)"])
    print(f"\n{device_name}: samples/s, median of timed windows")
    print(f"  {'run':<24}{'samples/s':>12}{'/ baseline':>12}{'/ DDP baseline':>16}")
    for name, rates in results.items():
        rate = statistics.median(rates)
        print(f"  {name:<24}{rate:12,.0f}{rate / base:12.3f}{rate / ddp_base:16.3f}")
    print("  (baseline: windows of one run before and one after the entry points)")
    for name, why in skipped.items():
        print(f"  skipped {name}: {why}")
    ratios = [
        statistics.median(results[entry.name]) / base
        for entry in ENTRY_POINTS
        if entry.name in results
    ]
    if ratios:
        print(f"  lowest entry point / baseline: {min(ratios):.3f}   target >= 0.9 on a GPU")


if __name__ == "__main__":
    main()
