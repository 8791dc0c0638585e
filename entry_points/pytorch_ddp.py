"""Train a small classifier with PyTorch DistributedDataParallel (DDP).

Started by torchrun (directly, or through smdist's ``launch_torchrun.py`` on SageMaker), one
process per GPU, or one per host on CPUs. Each process:

1. joins the default process group (``SMDIST_BACKEND``: auto = NCCL on GPUs, gloo on CPUs;
   ``SMDIST_COLLECTIVE_TIMEOUT`` seconds before a stuck collective fails, 0 = torch's default);
2. takes its shard of the data (``*.npz`` from the train channel, or synthetic data);
3. wraps the model in DDP, which averages gradients over all processes during backward;
4. scales the learning rate with the number of processes (the global batch grows with it);
5. trains with bf16/fp16 autocast and TF32 on GPUs that have them (``--mixed_precision False``
   turns that off), printing ``[metrics]`` lines on rank 0;
6. checkpoints every ``--checkpoint_every`` steps and at the end (rank 0), resumes from the
   newest checkpoint (one already at the end trains nothing, and says so), and on SIGTERM
   checkpoints and exits 143;
7. saves the trained weights once, from rank 0, to ``model.pt`` in SM_MODEL_DIR.

``pytorch_sddp.py`` runs this same script on SageMaker's smddp backend.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from smdist.runtime import paths
from smdist.runtime.args import parse_training_args, training_arg_parser
from smdist.runtime.stop import StopRequest
from smdist.runtime.torch_training import (
    ConfigurationError,
    LoopSettings,
    RankAgreement,
    build_classifier,
    choose_precision,
    collective_timeout,
    ensure_rendezvous_env,
    finish,
    main_rank_checkpoints,
    pick_device,
    resume,
    run_entry_point,
    run_training,
    say,
    share_cpu_threads,
    training_data,
)

BACKENDS = ("auto", "nccl", "gloo")


def resolve_backend(requested: str) -> str:
    """``auto`` means NCCL where there are GPUs and gloo on CPUs."""
    if requested not in BACKENDS:
        raise ConfigurationError(
            f"SMDIST_BACKEND={requested!r} must be one of {', '.join(BACKENDS)}"
        )
    if requested == "auto":
        return "nccl" if torch.cuda.is_available() else "gloo"
    if requested == "nccl" and not torch.cuda.is_available():
        raise ConfigurationError("SMDIST_BACKEND='nccl' needs GPUs; this host has none (use gloo)")
    return requested


def parse_args(argv: list[str] | None = None):
    parser = training_arg_parser()
    parser.add_argument("--hidden_size", type=int, default=128)
    return parse_training_args(argv, parser)


def main(argv: list[str] | None = None, backend: str | None = None) -> int:
    args = parse_args(argv)
    stop = StopRequest()  # before the slow setup: a SIGTERM during it still stops cleanly
    ensure_rendezvous_env()
    backend = backend or resolve_backend(args.smdist_backend)
    dist.init_process_group(backend, timeout=collective_timeout(args.smdist_collective_timeout))
    share_cpu_threads()  # mpirun (SDDP, SMP v1) sets no thread count; torchrun sets 1 for many
    rank, world_size = dist.get_rank(), dist.get_world_size()
    is_main = rank == 0
    device = pick_device(int(os.environ["LOCAL_RANK"]))
    precision = choose_precision(device, args.mixed_precision)

    loader, sampler, features, classes = training_data(args, world_size, rank, device)
    model = build_classifier(features, classes, args.hidden_size).to(device)
    device_ids = [device.index] if device.type == "cuda" else None
    ddp_model = DistributedDataParallel(model, device_ids=device_ids)
    optimizer = torch.optim.SGD(
        ddp_model.parameters(), lr=args.learning_rate * world_size, momentum=0.9
    )
    scaler = precision.grad_scaler()
    if is_main:
        say(
            f"pytorch_ddp: {world_size} processes, backend {backend}, device {device.type}, "
            f"{precision.describe()}, global batch {args.batch_size * world_size}, "
            f"learning rate {args.learning_rate * world_size:g}"
        )

    checkpoint_dir = paths.checkpoint_dir()
    start_step = resume(model, optimizer, checkpoint_dir, is_main)

    def train_step(batch: list[torch.Tensor]) -> torch.Tensor:
        inputs, targets = (tensor.to(device, non_blocking=True) for tensor in batch)
        optimizer.zero_grad(set_to_none=True)
        with precision.autocast():
            loss = F.cross_entropy(ddp_model(inputs), targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss

    result = run_training(
        loader,
        sampler,
        train_step,
        LoopSettings.from_args(args, replicas=world_size),
        checkpoint=main_rank_checkpoints(model, optimizer, checkpoint_dir, is_main),
        stop=stop,
        agree=RankAgreement(device),
        is_main=is_main,
        start_step=start_step,
    )
    return finish(result, rank=rank, model=model, is_main=is_main)


if __name__ == "__main__":
    run_entry_point(lambda: main(sys.argv[1:]))
