"""Train a small classifier with Horovod for PyTorch.

Started by a Horovod launcher, one process per GPU (or one per host on CPUs): on SageMaker by
mpirun (distribution ``{"mpi": {"enabled": True, "processes_per_host": N}}``), elsewhere by
``horovodrun -np N --gloo`` or ``horovodrun -np N -H host1:n,host2:n``. Each process:

1. joins Horovod (``hvd.init()``) and takes the GPU of its local rank, if there are GPUs;
2. takes its shard of the data, by Horovod rank (``*.npz`` from the train channel, or
   synthetic data);
3. wraps the optimizer in ``hvd.DistributedOptimizer``, which averages gradients over all
   processes, with the learning rate scaled by ``hvd.size()`` (the global batch grows with it);
4. starts from rank 0's parameters and optimizer state (broadcast): its newest checkpoint when
   there is one, else its fresh initialisation;
5. trains with bf16/fp16 autocast and TF32 on GPUs that have them (``--mixed_precision False``
   turns that off), printing ``[metrics]`` lines on rank 0;
6. checkpoints every ``--checkpoint_every`` steps (rank 0); on SIGTERM (reaching any rank) all
   ranks stop at the same step, rank 0 checkpoints and every rank exits 143;
7. saves the trained weights once, from rank 0, to ``model.pt`` in SM_MODEL_DIR.
"""

from __future__ import annotations

import sys

import horovod.torch as hvd
import torch
import torch.nn.functional as F

from smdist.runtime import paths
from smdist.runtime.args import parse_training_args, training_arg_parser
from smdist.runtime.horovod_training import apply_collective_timeout, check_world_size
from smdist.runtime.stop import StopRequest
from smdist.runtime.torch_training import (
    LoopSettings,
    build_classifier,
    choose_precision,
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


def parse_args(argv: list[str] | None = None):
    parser = training_arg_parser()
    parser.add_argument("--hidden_size", type=int, default=128)
    return parse_training_args(argv, parser)


class HorovodAgreement:
    """One all-reduce carries the window's loss and every rank's stop flag.

    Ranks that receive SIGTERM at different steps still stop at the same step: a rank that
    left alone would leave its peers waiting in the next gradient all-reduce.
    """

    def __call__(self, loss_sum: torch.Tensor, count: int, stop: bool) -> tuple[float, bool]:
        packed = torch.tensor(
            [float(loss_sum.detach().float().cpu()), float(count), float(stop)],
            dtype=torch.float64,
        )
        total, counted, stops = hvd.allreduce(packed, op=hvd.Sum, name="smdist.agree").tolist()
        return (total / counted if counted else float("nan")), stops > 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = StopRequest()  # before the slow setup: a SIGTERM during it still stops cleanly
    apply_collective_timeout(args.smdist_collective_timeout)
    hvd.init()
    check_world_size(hvd.size(), hvd.mpi_built())
    share_cpu_threads(hvd.local_size())
    rank, world_size = hvd.rank(), hvd.size()
    is_main = rank == 0
    device = pick_device(hvd.local_rank())
    precision = choose_precision(device, args.mixed_precision)

    loader, sampler, features, classes = training_data(args, world_size, rank, device)
    model = build_classifier(features, classes, args.hidden_size).to(device)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=args.learning_rate * world_size, momentum=0.9),
        named_parameters=model.named_parameters(),
    )
    scaler = precision.grad_scaler()
    if is_main:
        controller = "MPI" if hvd.mpi_enabled() else "Gloo"
        say(
            f"pytorch_horovod: {world_size} processes on {hvd.cross_size()} host(s), "
            f"{controller}, device {device.type}, "
            f"{precision.describe()}, global batch {args.batch_size * world_size}, "
            f"learning rate {args.learning_rate * world_size:g}"
        )

    # Rank 0 reads the newest checkpoint (other hosts may not have the file); the broadcasts
    # below give every rank its parameters, optimizer state and step.
    checkpoint_dir = paths.checkpoint_dir()
    start_step = resume(model, optimizer, checkpoint_dir, is_main)
    start_step = hvd.broadcast_object(start_step, root_rank=0, name="smdist.start_step")
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    def train_step(batch: list[torch.Tensor]) -> torch.Tensor:
        inputs, targets = (tensor.to(device, non_blocking=True) for tensor in batch)
        optimizer.zero_grad()  # Horovod's override takes no set_to_none (torch's default: True)
        with precision.autocast():
            loss = F.cross_entropy(model(inputs), targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            # The all-reduce must finish before the scaler inspects the gradients for inf/nan.
            optimizer.synchronize()
            scaler.unscale_(optimizer)
            with optimizer.skip_synchronize():
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
        agree=HorovodAgreement(),
        is_main=is_main,
        start_step=start_step,
    )
    return finish(result, rank=rank, model=model, is_main=is_main)


if __name__ == "__main__":
    run_entry_point(lambda: main(sys.argv[1:]))
