"""Throughput of the DDP entry point against two loops on the same model, data and ranks.

All runs use torchrun with 2 CPU ranks (gloo), the same MLP, the same synthetic data and
sharded loader, the same batch size and optimizer. Three loops are compared:

- ``entry``: ``entry_points/pytorch_ddp.py`` and its harness (``run_training``: metric lines,
  the SIGTERM agreement, the loss kept on the device between log points; checkpoints off);
- ``naive``: the loop tutorials show, reading ``loss.item()`` and printing every step;
- ``bare``: a plain DDP loop that reports nothing, the floor for any harness.

Part 1 launches each as its own job (the entry point as shipped), round-robin ``--repeats``
times, and reports the best and the median samples/s of each (after the first, warm-up step).
Job-to-job noise on a shared machine is larger than the differences sought, so part 2 runs
the three loops inside one job, alternating blocks of ``--block`` steps over the same
pre-loaded batches so that noise falls on all three alike (the harness block is
``run_training`` with the entry point's step function), and part 3 times each loop around a
step that does no work, which isolates what the loop itself costs per step. The verdict
relates part 3's per-step costs to part 2's bare step time. Targets: entry / naive throughput
>= 1.0; harness overhead < 3%.

    .venv/bin/python bench/bench_ddp_throughput.py [--repeats 5] [--rounds 8]

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
RESULT = re.compile(r"RESULT (\w+) seconds=([0-9.]+) steps=(\d+)")
COST = re.compile(r"COST (\w+) us_per_step=([0-9.]+)")
RATE = re.compile(r"RESULT samples_per_sec=([0-9.]+)")
FINAL_METRICS = re.compile(r"\[metrics\] .*samples_per_sec=([0-9.]+)")
VARIANTS = ("entry", "naive", "bare")
WORKLOAD = ("epochs", "samples", "batch_size", "hidden_size", "learning_rate", "seed")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def workload_args(options: argparse.Namespace) -> list[str]:
    values = {**vars(options), "learning_rate": 0.01, "seed": 42}
    return [item for name in WORKLOAD for item in (f"--{name}", str(values[name]))]


def torchrun(script: list[str], options: argparse.Namespace) -> str:
    """Run ``script`` on 2 ranks in a scratch directory; its output."""
    with tempfile.TemporaryDirectory(prefix="bench-ddp-") as scratch:
        command = [
            sys.executable, "-m", "torch.distributed.run",
            "--nnodes", "1", "--nproc_per_node", "2",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            *script, *workload_args(options),
        ]  # fmt: skip
        env = {key: value for key, value in os.environ.items() if not key.startswith("SM_")}
        env.pop("SMDIST_CHECKPOINT_DIR", None)
        env.update({"SM_MODEL_DIR": str(Path(scratch) / "model"), "OMP_NUM_THREADS": "1"})
        result = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=900, cwd=scratch
        )
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(script)} failed (exit {result.returncode}):\n{output}")
    return output


def launch(variant: str, options: argparse.Namespace) -> float:
    """Part 1: one job of ``variant``; samples/s as the variant reports it."""
    if variant == "entry":
        script = [str(ENTRY_POINT), "--checkpoint_every", "0", "--log_every", "10"]
        pattern = FINAL_METRICS
    else:
        script = [str(Path(__file__).resolve()), "--worker", variant]
        pattern = RATE
    found = pattern.findall(torchrun(script, options))
    if not found:
        raise SystemExit(f"the {variant} run printed no throughput")
    return float(found[-1])


# --- workers (one process per rank under torchrun) ----------------------------------------


def worker(variant: str, argv: list[str]) -> None:
    from smdist.runtime.torch_training import run_entry_point

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--block", type=int, default=200)
    parser.add_argument("--empty_steps", type=int, default=40_000)
    for name in WORKLOAD:
        parser.add_argument(f"--{name}", type=float if name == "learning_rate" else int)
    args = parser.parse_args(argv)
    job = interleaved if variant == "interleaved" else one_loop
    # run_entry_point leaves the process group after the model is freed, as the entry point does.
    run_entry_point(lambda: job(variant, args))


def setup(args: argparse.Namespace):
    """Model, data, optimizer and the entry point's step function, as pytorch_ddp.py has them."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    from smdist.runtime.torch_training import build_classifier, load_train_data, sharded_loader

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    dataset, features, classes = load_train_data(None, args.samples, args.seed)
    loader, sampler = sharded_loader(dataset, args.batch_size, world_size, rank, args.seed)
    model = DistributedDataParallel(build_classifier(features, classes, args.hidden_size))
    optimizer = torch.optim.SGD(
        model.parameters(), lr=args.learning_rate * world_size, momentum=0.9
    )
    device = torch.device("cpu")

    def train_step(batch):
        inputs, targets = (tensor.to(device, non_blocking=True) for tensor in batch)
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    return rank, world_size, loader, sampler, train_step


def one_loop(variant: str, args: argparse.Namespace) -> int:
    """Part 1's naive and bare jobs."""
    rank, world_size, loader, sampler, train_step = setup(args)
    steps, started, counted_from = 0, None, 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            loss = train_step(batch)
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
    return 0


def interleaved(_: str, args: argparse.Namespace) -> int:
    """Part 2: the three loops in alternating blocks over the same pre-loaded batches."""
    from smdist.runtime.stop import StopRequest
    from smdist.runtime.torch_training import LoopSettings, RankAgreement, run_training

    rank, world_size, loader, sampler, train_step = setup(args)
    batches = []
    while len(batches) < args.block:
        sampler.set_epoch(len(batches))
        batches.extend(loader)
    batches = batches[: args.block]
    stop, agree = StopRequest(), RankAgreement(__import__("torch").device("cpu"))
    settings = LoopSettings(
        epochs=1,
        max_steps=0,
        log_every=10,
        checkpoint_every=0,
        global_batch=args.batch_size * world_size,
    )

    class Once:  # run_training calls set_epoch; the batches are fixed here
        def set_epoch(self, epoch: int) -> None:
            pass

    def bare() -> None:
        for batch in batches:
            train_step(batch)

    def naive() -> None:
        for step, batch in enumerate(batches, 1):
            value = train_step(batch).item()
            if rank == 0:
                print(f"step {step} loss {value:.4f}", flush=True)

    def harness() -> None:
        run_training(
            batches, Once(), train_step, settings,
            checkpoint=lambda step: None, stop=stop, agree=agree, is_main=rank == 0,
        )  # fmt: skip

    loops = {"bare": bare, "naive": naive, "entry": harness}
    seconds = dict.fromkeys(loops, 0.0)
    bare()  # warm-up
    for round_index in range(args.rounds):
        order = list(loops)[round_index % 3 :] + list(loops)[: round_index % 3]
        for name in order:
            started = time.perf_counter()
            loops[name]()
            seconds[name] += time.perf_counter() - started
    if rank == 0:
        for name, total in seconds.items():
            print(f"RESULT {name} seconds={total:.6f} steps={args.rounds * args.block}")
    loop_costs(rank, args.empty_steps, stop, agree, settings)
    return 0


def loop_costs(rank: int, steps: int, stop, agree, settings) -> None:
    """Part 3: each loop around a step that does no work, both ranks in step."""
    import torch
    import torch.distributed as dist

    from smdist.runtime.torch_training import run_training

    loss, batches = torch.tensor(1.0), range(steps)

    class Once:
        def set_epoch(self, epoch: int) -> None:
            pass

    def no_work(batch):
        return loss

    def empty() -> None:
        for batch in batches:
            no_work(batch)

    def naive() -> None:
        for step in batches:
            value = no_work(step).item()
            if rank == 0:
                print(f"step {step} loss {value:.4f}", flush=True)

    def harness() -> None:
        run_training(
            batches, Once(), no_work, settings,
            checkpoint=lambda step: None, stop=stop, agree=agree, is_main=rank == 0,
        )  # fmt: skip

    costs = {}
    for name, loop in (("empty", empty), ("naive", naive), ("entry", harness)):
        dist.barrier()
        started = time.perf_counter()
        loop()
        costs[name] = time.perf_counter() - started
    if rank == 0:
        for name in ("naive", "entry"):
            extra = (costs[name] - costs["empty"]) / steps * 1e6
            print(f"COST {name} us_per_step={max(extra, 0.0):.3f}")


# --- the report ---------------------------------------------------------------------------


def part_one(options: argparse.Namespace) -> None:
    steps = options.epochs * (options.samples // 2 // options.batch_size)
    print(f"Part 1: separate jobs, {steps} steps each, {options.repeats} rounds")
    rates: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for repeat in range(options.repeats):
        for variant in VARIANTS:
            rates[variant].append(launch(variant, options))
        line = "  ".join(f"{v}={rates[v][-1]:.0f}" for v in VARIANTS)
        print(f"  round {repeat + 1}: samples/s {line}", flush=True)
    best = {variant: max(values) for variant, values in rates.items()}
    median = {variant: statistics.median(values) for variant, values in rates.items()}
    for variant in VARIANTS:
        print(
            f"  {variant:>5}: best {best[variant]:8.0f} samples/s   "
            f"median {median[variant]:8.0f} samples/s"
        )
    print(
        f"  entry / naive: best {best['entry'] / best['naive']:.3f}   "
        f"median {median['entry'] / median['naive']:.3f}"
    )
    print(
        f"  entry vs bare: best {best['bare'] / best['entry'] - 1:+.2%}   "
        f"median {median['bare'] / median['entry'] - 1:+.2%} per step"
    )


def part_two_and_three(options: argparse.Namespace) -> None:
    script = [
        str(Path(__file__).resolve()), "--worker", "interleaved",
        "--rounds", str(options.rounds), "--block", str(options.block),
    ]  # fmt: skip
    output = torchrun(script, options)
    timing = {name: (float(seconds), int(steps)) for name, seconds, steps in RESULT.findall(output)}
    costs = {name: float(value) for name, value in COST.findall(output)}
    print(
        f"Part 2: one job, {options.rounds} rounds x {options.block} steps per loop, "
        "blocks alternating"
    )
    per_step = {name: 1e6 * seconds / count for name, (seconds, count) in timing.items()}
    global_batch = 2 * options.batch_size
    for name in VARIANTS:
        rate = global_batch * timing[name][1] / timing[name][0]
        print(f"  {name:>5}: {rate:8.0f} samples/s   {per_step[name]:8.1f} us/step")
    print(
        f"  entry / naive: {per_step['naive'] / per_step['entry']:.3f}   entry vs bare: "
        f"{per_step['entry'] / per_step['bare'] - 1:+.2%} per step"
    )
    print()
    print("Part 3: what each loop adds per step around a step that does no work")
    for name in ("naive", "entry"):
        print(f"  {name:>5}: {costs[name]:6.2f} us/step")
    bare = per_step["bare"]
    ratio = (bare + costs["naive"]) / (bare + costs["entry"])
    print()
    print(
        f"Verdict (part 3 costs over part 2's bare step of {bare:.0f} us):\n"
        f"  entry / naive throughput: {ratio:.4f}   target >= 1.0\n"
        f"  harness overhead vs bare DDP loop: {costs['entry']:.2f} us/step = "
        f"{costs['entry'] / bare:.3%}   target < 3%"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--samples", type=int, default=25_600)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--hidden_size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--block", type=int, default=200)
    options = parser.parse_args()
    print(
        f"2 CPU ranks (torchrun, gloo), MLP hidden={options.hidden_size}, batch "
        f"{options.batch_size} per rank\n"
    )
    part_one(options)
    print()
    part_two_and_three(options)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3:])
    else:
        main()
