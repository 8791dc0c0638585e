"""Throughput of the DDP entry point against two loops on the same model, data and ranks.

Three variants, each launched with torchrun on 2 CPU ranks (gloo), each training the same MLP
on the same synthetic data with the same sharded loader, batch size and optimizer:

- ``entry``: ``entry_points/pytorch_ddp.py`` (its own training loop and harness: metric lines,
  SIGTERM agreement, loss kept on the device between log points; checkpoints off);
- ``naive``: the loop tutorials show, reading ``loss.item()`` and printing every step;
- ``bare``: a plain DDP loop with no logging at all, the floor for any harness.

Each variant reports samples per second over its steps after the first (warm-up); the script
runs the variants round-robin ``--repeats`` times and compares medians:

- entry / naive throughput (target >= 1.0): the harness costs less than per-step reporting;
- harness overhead per step, entry vs bare (target < 3%).

    .venv/bin/python bench/bench_ddp_throughput.py [--repeats 3] [--epochs 4]

Not a test: figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRY_POINT = REPO / "entry_points" / "pytorch_ddp.py"
RESULT = re.compile(r"RESULT samples_per_sec=([0-9.]+)")
FINAL_METRICS = re.compile(r"\[metrics\] .*samples_per_sec=([0-9.]+)")
VARIANTS = ("entry", "naive", "bare")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def workload_args(options: argparse.Namespace) -> list[str]:
    return [
        "--epochs", str(options.epochs),
        "--samples", str(options.samples),
        "--batch_size", str(options.batch_size),
        "--hidden_size", str(options.hidden_size),
        "--learning_rate", "0.01",
        "--seed", "42",
    ]  # fmt: skip


def launch(variant: str, options: argparse.Namespace) -> float:
    """Run one variant under torchrun; its samples/s as the variant reports it."""
    with tempfile.TemporaryDirectory(prefix="bench-ddp-") as scratch:
        if variant == "entry":
            script = [str(ENTRY_POINT), "--checkpoint_every", "0", "--log_every", "10"]
        else:
            script = [str(Path(__file__).resolve()), "--worker", variant]
        command = [
            sys.executable, "-m", "torch.distributed.run",
            "--nnodes", "1", "--nproc_per_node", "2",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            *script, *workload_args(options),
        ]  # fmt: skip
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("SM_") and key != "SMDIST_CHECKPOINT_DIR"
        }
        env.update({"SM_MODEL_DIR": str(Path(scratch) / "model"), "OMP_NUM_THREADS": "1"})
        result = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=600, cwd=scratch
        )
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise SystemExit(f"{variant} run failed (exit {result.returncode}):\n{output}")
    found = (FINAL_METRICS if variant == "entry" else RESULT).findall(output)
    if not found:
        raise SystemExit(f"{variant} run printed no throughput:\n{output}")
    return float(found[-1])


def worker(variant: str, argv: list[str]) -> None:
    """The ``naive`` and ``bare`` loops, one process per rank under torchrun."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    from smdist.runtime.torch_training import build_classifier, load_train_data, sharded_loader

    parser = argparse.ArgumentParser()
    for name, kind in (
        ("epochs", int),
        ("samples", int),
        ("batch_size", int),
        ("hidden_size", int),
        ("learning_rate", float),
        ("seed", int),
    ):
        parser.add_argument(f"--{name}", type=kind, required=True)
    args = parser.parse_args(argv)

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    dataset, features, classes = load_train_data(None, args.samples, args.seed)
    loader, sampler = sharded_loader(dataset, args.batch_size, world_size, rank, args.seed)
    model = DistributedDataParallel(build_classifier(features, classes, args.hidden_size))
    optimizer = torch.optim.SGD(
        model.parameters(), lr=args.learning_rate * world_size, momentum=0.9
    )
    steps, started, counted_from = 0, None, 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for inputs, targets in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
            steps += 1
            if variant == "naive":
                value = loss.item()
                if rank == 0:
                    print(f"epoch {epoch + 1} step {steps} loss {value:.4f}", flush=True)
            if started is None:
                started, counted_from = time.perf_counter(), steps
    elapsed = time.perf_counter() - started
    if rank == 0:
        rate = args.batch_size * world_size * (steps - counted_from) / elapsed
        print(f"RESULT samples_per_sec={rate:.1f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--samples", type=int, default=25_600)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--hidden_size", type=int, default=256)
    options = parser.parse_args()
    steps = options.epochs * (options.samples // 2 // options.batch_size)
    print(
        f"2 CPU ranks (torchrun, gloo), MLP hidden={options.hidden_size}, batch "
        f"{options.batch_size} per rank, {steps} steps per run, {options.repeats} runs each"
    )
    rates: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for repeat in range(options.repeats):
        for variant in VARIANTS:
            rates[variant].append(launch(variant, options))
        line = "  ".join(f"{v}={rates[v][-1]:.0f}" for v in VARIANTS)
        print(f"run {repeat + 1}: samples/s {line}", flush=True)

    median = {variant: statistics.median(values) for variant, values in rates.items()}
    global_batch = 2 * options.batch_size
    step_us = {variant: 1e6 * global_batch / rate for variant, rate in median.items()}
    overhead_us = step_us["entry"] - step_us["bare"]
    print()
    for variant in VARIANTS:
        print(
            f"{variant:>5}: {median[variant]:9.0f} samples/s (median)  "
            f"{step_us[variant]:8.1f} us/step"
        )
    ratio = median["entry"] / median["naive"]
    overhead = overhead_us / step_us["bare"]
    print(f"entry / naive throughput: {ratio:.3f}  (target >= 1.0)")
    print(
        f"harness overhead vs bare DDP loop: {overhead_us:+.1f} us/step = {overhead:+.2%}  "
        "(target < 3%)"
    )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3:])
    else:
        main()
