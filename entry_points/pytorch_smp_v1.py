"""Train a small classifier with SageMaker Model Parallel v1 (``smdistributed.modelparallel``).

SageMaker starts SMP v1 jobs with mpirun (the ``mpi`` distribution), one process per GPU, and
passes the ``modelparallel`` parameters as SM_HP_MP_PARAMETERS; ``smp.init()`` reads them.
The script uses the library the way its documentation asks:

- ``smp.DistributedModel`` / ``smp.DistributedOptimizer`` wrap the model and optimizer; the
  model is not moved to a device by hand (the library places its partitions);
- forward and ``model.backward(loss)`` run inside an ``@smp.step`` function, which splits each
  batch into ``microbatches`` and returns the per-microbatch losses (``reduce_mean()`` gives the
  batch loss); ``optimizer.step()`` runs outside it, once per batch;
- data is sharded over the data-parallel group (``smp.dp_size()`` / ``smp.dp_rank()``), the
  batch size must be a multiple of ``microbatches``, and the learning rate scales with
  ``smp.dp_size()``;
- checkpoints and the final model go through ``smp.save`` (full, not partial, files), written by
  rank 0 after every ``dp_rank() == 0`` rank has gathered the state dict.

Outside SageMaker, ``import_smp()`` supplies smdist's stand-in: SMP's ranks and groups, every
rank keeping the whole model, gradients averaged over the data-parallel group (see
``smdist.runtime.smp``). On GPUs with bf16 the forward pass runs under bf16 autocast (SMP v1's
fp16 mode needs its own loss scaler, so fp16 autocast is not used here); TF32 is enabled from
Ampere on.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from smdist.runtime import paths
from smdist.runtime.args import parse_training_args, training_arg_parser
from smdist.runtime.checkpoints import save_checkpoint
from smdist.runtime.smp import import_smp, using_stand_in
from smdist.runtime.smp.config import parse_mp_parameters
from smdist.runtime.stop import StopRequest
from smdist.runtime.torch_training import (
    ConfigurationError,
    LoopSettings,
    RankAgreement,
    build_classifier,
    choose_precision,
    exit_code,
    final_report,
    pick_device,
    report_checksum,
    resume,
    run_entry_point,
    run_training,
    say,
    training_data,
)


def parse_args(argv: list[str] | None = None):
    parser = training_arg_parser()
    parser.add_argument("--hidden_size", type=int, default=128)
    return parse_training_args(argv, parser)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = StopRequest()
    microbatches = parse_mp_parameters().microbatches
    if args.batch_size % microbatches:
        raise ConfigurationError(
            f"batch_size={args.batch_size} is not a multiple of the SMP parameter "
            f"microbatches={microbatches}; every batch is split into that many equal parts"
        )

    smp = import_smp()
    smp.init()
    is_main = smp.rank() == 0
    device = pick_device(smp.local_rank())
    precision = choose_precision(device, args.mixed_precision, allow_fp16=False)

    loader, sampler, features, classes = training_data(args, smp.dp_size(), smp.dp_rank(), device)
    model = smp.DistributedModel(build_classifier(features, classes, args.hidden_size))
    optimizer = smp.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=args.learning_rate * smp.dp_size(), momentum=0.9)
    )
    if is_main:
        say(
            f"pytorch_smp_v1: {smp.size()} processes ({smp.dp_size()} data-parallel x "
            f"{smp.mp_size()} model-parallel), {microbatches} microbatches, device "
            f"{device.type}, {precision.describe()}, global batch "
            f"{args.batch_size * smp.dp_size()}, learning rate "
            f"{args.learning_rate * smp.dp_size():g}"
        )

    checkpoint_dir = paths.checkpoint_dir()
    start_step = resume(model, optimizer, checkpoint_dir, is_main)

    @smp.step
    def forward_backward(model, inputs, targets):
        with precision.autocast():
            loss = F.cross_entropy(model(inputs), targets)
        model.backward(loss)
        return loss

    def train_step(batch: list[torch.Tensor]) -> torch.Tensor:
        inputs, targets = (tensor.to(device, non_blocking=True) for tensor in batch)
        optimizer.zero_grad(set_to_none=True)
        microbatch_losses = forward_backward(model, inputs, targets)
        optimizer.step()
        return microbatch_losses.reduce_mean()

    def full_state() -> dict | None:
        """The whole model and optimizer on rank 0; every dp_rank 0 rank must take part."""
        if smp.dp_rank() != 0:
            return None
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
        return state if is_main else None

    def checkpoint(step: int) -> Path | None:
        """Rank 0 writes and returns the file (the loop announces it); others return None."""
        state = full_state()
        if state is None:
            return None
        return save_checkpoint(
            checkpoint_dir,
            step,
            lambda p: smp.save({**state, "step": step}, str(p), partial=False),
        )

    result = run_training(
        loader,
        sampler,
        train_step,
        LoopSettings.from_args(args, replicas=smp.dp_size()),
        checkpoint=checkpoint,
        stop=stop,
        agree=RankAgreement(device),
        is_main=is_main,
        start_step=start_step,
    )
    final_report(result, is_main)
    local = model.local_state_dict()
    local.pop("_smp_is_partial", None)
    report_checksum(smp.rank(), local)
    if not result.stopped:
        state = full_state()
        if state is not None:
            model_dir = paths.model_dir()
            model_dir.mkdir(parents=True, exist_ok=True)
            smp.save(state["model"], str(model_dir / "model.pt"), partial=False)
            say(f"model saved to {model_dir / 'model.pt'}")
    smp.barrier()
    return exit_code(result)


if __name__ == "__main__":
    # The real library owns its process groups; the stand-in's group is left in order.
    run_entry_point(lambda: main(sys.argv[1:]), leave_group=using_stand_in(import_smp()))
