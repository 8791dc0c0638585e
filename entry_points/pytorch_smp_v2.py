"""Train a small classifier with SageMaker Model Parallel v2 (``torch.sagemaker``) and FSDP.

SMP v2 is PyTorch FSDP with SageMaker's extras. SageMaker starts it with torchrun (the
``torch_distributed`` distribution plus ``smdistributed.modelparallel``), one process per GPU,
and passes the parameters as SM_HP_MP_PARAMETERS. The script:

1. calls ``tsm.init()``, which reads them and joins the process group;
2. calls ``tsm.transform(model)`` (SMP's tensor-parallel rewrite for the Hugging Face models it
   supports; it leaves this MLP as it is) and shards the model with FSDP2 ``fully_shard`` over
   the device mesh that ``hybrid_shard_degree`` describes (0: shard over every rank, 1: keep a
   full copy on each rank, k: shard within groups of k ranks);
3. trains on its shard of the data with a learning rate scaled by the world size, bf16 mixed
   precision and TF32 on GPUs that have them, ``[metrics]`` lines on rank 0;
4. checkpoints full (unsharded) state dicts from rank 0, resumes from the newest one, and on
   SIGTERM checkpoints and exits 143;
5. saves the full weights once, from rank 0, to ``model.pt`` in SM_MODEL_DIR.

Outside SMP v2 containers ``import_tsm()`` supplies smdist's stand-in (plain FSDP; it refuses
tensor, context and expert parallel degrees above 1 and says so).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.fsdp import MixedPrecisionPolicy

from smdist.runtime import paths
from smdist.runtime.args import parse_training_args, training_arg_parser
from smdist.runtime.smp_v2 import import_tsm, shard_model
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
    read_latest_checkpoint,
    report_checksum,
    run_entry_point,
    run_training,
    say,
    training_data,
    write_checkpoint,
)

FULL_ON_RANK_0 = StateDictOptions(full_state_dict=True, cpu_offload=True)
FULL_ON_EVERY_RANK = StateDictOptions(full_state_dict=True)
FROM_RANK_0 = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)


def parse_args(argv: list[str] | None = None):
    parser = training_arg_parser()
    parser.add_argument("--hidden_size", type=int, default=128)
    return parse_training_args(argv, parser)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = StopRequest()
    tsm = import_tsm()
    tsm.init()
    if tsm.state.tp_size > 1:
        raise ConfigurationError(
            f"tensor_parallel_degree={tsm.state.tp_size}: SMP v2 tensor parallelism applies to "
            "the Hugging Face transformers it supports; this entry point trains an MLP, so "
            "set tensor_parallel_degree to 1"
        )
    rank, world_size = dist.get_rank(), dist.get_world_size()
    is_main = rank == 0
    device = pick_device(int(os.environ.get("LOCAL_RANK", "0")))
    precision = choose_precision(device, args.mixed_precision, allow_fp16=False)
    # FSDP casts parameters itself (no autocast): bf16 compute, fp32 gradient reduction.
    mp_policy = MixedPrecisionPolicy(
        param_dtype=precision.autocast_dtype, reduce_dtype=torch.float32
    )
    dtype = precision.autocast_dtype
    precision_text = "fp32" if dtype is None else f"{str(dtype).replace('torch.', '')} parameters"
    if precision.tf32:
        precision_text += ", TF32 matmuls"

    loader, sampler, features, classes = training_data(args, world_size, rank, device)
    model = tsm.transform(build_classifier(features, classes, args.hidden_size).to(device))
    layers = [module for module in model.modules() if isinstance(module, nn.Linear)]
    hybrid_shard_degree = tsm.state.hybrid_shard_degree or 0
    shard_model(model, hybrid_shard_degree, blocks=layers, mp_policy=mp_policy)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=args.learning_rate * world_size, momentum=0.9
    )
    if is_main:
        say(
            f"pytorch_smp_v2: {world_size} processes, FSDP with hybrid_shard_degree="
            f"{hybrid_shard_degree}, device {device.type}, {precision_text}, global "
            f"batch {args.batch_size * world_size}, learning rate "
            f"{args.learning_rate * world_size:g}"
        )

    checkpoint_dir = paths.checkpoint_dir()
    start_step = 0
    resumed = read_latest_checkpoint(checkpoint_dir, is_main)
    if resumed is not None:
        set_model_state_dict(model, resumed["model"], options=FROM_RANK_0)
        set_optimizer_state_dict(model, optimizer, resumed["optimizer"], options=FROM_RANK_0)
        start_step = resumed["step"]

    def train_step(batch: list[torch.Tensor]) -> torch.Tensor:
        inputs, targets = (tensor.to(device, non_blocking=True) for tensor in batch)
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    def checkpoint(step: int) -> Path | None:
        # Gathering the full state is a collective: every rank takes part, rank 0 writes.
        payload = {
            "model": get_model_state_dict(model, options=FULL_ON_RANK_0),
            "optimizer": get_optimizer_state_dict(model, optimizer, options=FULL_ON_RANK_0),
        }
        return write_checkpoint(checkpoint_dir, step, payload) if is_main else None

    result = run_training(
        loader,
        sampler,
        train_step,
        LoopSettings.from_args(args, replicas=world_size),
        checkpoint=checkpoint,
        stop=stop,
        agree=RankAgreement(device),
        is_main=is_main,
        start_step=start_step,
    )
    final_report(result, is_main)
    report_checksum(rank, get_model_state_dict(model, options=FULL_ON_EVERY_RANK))
    if not result.stopped:
        weights = get_model_state_dict(model, options=FULL_ON_RANK_0)
        if is_main:
            model_dir = paths.model_dir()
            model_dir.mkdir(parents=True, exist_ok=True)
            torch.save(weights, model_dir / "model.pt")
            say(f"model saved to {model_dir / 'model.pt'}")
    return exit_code(result)


if __name__ == "__main__":
    run_entry_point(lambda: main(sys.argv[1:]))
