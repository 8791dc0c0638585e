"""Train a small Keras classifier with Horovod for TensorFlow (a custom training loop).

Started by a Horovod launcher, one process per GPU (or one per host on CPUs): on SageMaker by
mpirun (distribution ``{"mpi": {"enabled": True, "processes_per_host": N}}``), elsewhere by
``horovodrun -np N --gloo``. Each process:

1. joins Horovod (``hvd.init()``) and sees only the GPU of its local rank, if there are GPUs;
2. takes its part of every global batch, by Horovod rank (``*.npz`` from the train channel, or
   synthetic data);
3. averages gradients over all processes with ``hvd.DistributedGradientTape``, with the
   learning rate scaled by ``hvd.size()`` (the global batch grows with it);
4. starts from rank 0's weights and optimizer state (broadcast): its newest checkpoint when
   there is one, else its fresh initialisation;
5. trains in mixed precision on GPUs that support it (``--mixed_precision False`` turns it
   off), printing ``[metrics]`` lines on rank 0;
6. checkpoints every ``--checkpoint_every`` steps (rank 0); on SIGTERM (reaching any rank) all
   ranks stop at the same step, rank 0 checkpoints and every rank exits 143;
7. saves a SavedModel once, from rank 0, to SM_MODEL_DIR/1.

The TensorFlow estimator adds a ``--model_dir s3://...`` hyperparameter: it is accepted and
ignored, the model goes to SM_MODEL_DIR, which SageMaker uploads.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from smdist.runtime import checkpoints, paths, tf_training
from smdist.runtime.args import parse_training_args, tensorflow_arg_parser
from smdist.runtime.horovod_training import apply_collective_timeout, check_world_size
from smdist.runtime.metrics import log_metrics
from smdist.runtime.stop import TERMINATED_EXIT_CODE, StopRequest
from smdist.runtime.training_data import batch_indices, plan_steps, rank_slice, training_arrays

# Ranks agree on stopping at most this many steps after SIGTERM (SageMaker allows 120 s before
# SIGKILL); agreeing costs one small all-reduce and a wait for the device.
STOP_CHECK_EVERY = 10


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = tensorflow_arg_parser()
    args = parse_training_args(argv, parser)
    if args.smdist_collective_timeout < 0:
        parser.error(
            f"SMDIST_COLLECTIVE_TIMEOUT={args.smdist_collective_timeout}: use seconds >= 0 "
            "(0 keeps Horovod's default, no timeout)"
        )
    return args


def train(args: argparse.Namespace, stop: StopRequest) -> int:
    tf = tf_training.import_tensorflow()
    import horovod.tensorflow as hvd

    apply_collective_timeout(args.smdist_collective_timeout)
    hvd.init()
    check_world_size(hvd.size(), hvd.mpi_built())
    rank, world_size = hvd.rank(), hvd.size()
    is_main = rank == 0
    tf_training.configure_gpus(tf, visible_index=hvd.local_rank())
    policy = tf_training.select_precision(tf, args.mixed_precision)

    data = training_arrays(args.samples, args.seed)
    global_batch = args.batch_size * world_size
    plan = plan_steps(len(data.x), global_batch, args.epochs, args.max_steps)
    if is_main:
        controller = "MPI" if hvd.mpi_enabled() else "Gloo"
        tf_training.say(
            f"tensorflow_horovod: {world_size} processes on {hvd.cross_size()} host(s), "
            f"{controller}, global batch {global_batch}, learning rate "
            f"{args.learning_rate * world_size:g}, precision {policy}, data {data.source}, "
            f"{plan.total_steps} step(s)"
        )

    tf.keras.utils.set_random_seed(args.seed)
    model = tf_training.build_classifier(tf, data.num_features, data.num_classes)
    optimizer = tf.keras.optimizers.SGD(learning_rate=args.learning_rate * world_size, momentum=0.9)
    if policy == "mixed_float16":
        optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)
    optimizer.build(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    # Rank 0 reads the newest checkpoint (other hosts may not have the file); the broadcasts
    # below give every rank its weights, optimizer state and step.
    checkpoint_dir = paths.checkpoint_dir()
    start_step = 0
    found = checkpoints.latest_checkpoint(checkpoint_dir, tf_training.CHECKPOINT_SUFFIX)
    if is_main and found is not None:
        state = tf_training.read_training_state(found[1])
        start_step = tf_training.restore_training_state(model, optimizer, state, str(found[1]))
        tf_training.say(f"resuming from {found[1]} (step {start_step})")
    start_step = int(hvd.broadcast_object(start_step, root_rank=0, name="smdist.start_step"))
    hvd.broadcast_variables(model.variables, root_rank=0)
    hvd.broadcast_variables(optimizer.variables, root_rank=0)

    @tf.function
    def train_step(features: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features, training=True))
            scaled = optimizer.get_scaled_loss(loss) if policy == "mixed_float16" else loss
        tape = hvd.DistributedGradientTape(tape)
        gradients = tape.gradient(scaled, model.trainable_variables)
        if policy == "mixed_float16":
            gradients = optimizer.get_unscaled_gradients(gradients)
        # One gradient per variable (tape.gradient's contract).
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    def write_checkpoint(step: int) -> None:
        if is_main:
            state = tf_training.training_state(model, optimizer, step)
            path = checkpoints.save_checkpoint(
                checkpoint_dir,
                step,
                lambda target: tf_training.write_training_state(target, state),
                suffix=tf_training.CHECKPOINT_SUFFIX,
            )
            tf_training.say(f"checkpoint {path}")

    if start_step >= plan.total_steps and is_main:
        tf_training.say(tf_training.nothing_left(checkpoint_dir, start_step, plan, args))
    step = start_step
    window_loss, window_steps = tf.constant(0.0), 0
    window_started = started = time.perf_counter()
    last_loss = float("nan")
    for epoch, first, end in plan.epoch_segments(start_step):
        indices = rank_slice(
            batch_indices(len(data.x), args.seed, global_batch, epoch, first, end),
            rank,
            world_size,
        )
        for batch in indices:
            loss = train_step(tf.constant(data.x[batch]), tf.constant(data.y[batch]))
            step += 1
            window_loss += loss  # stays a tensor: ordinary steps never wait for the device
            window_steps += 1
            log_now = args.log_every > 0 and step % args.log_every == 0
            if log_now or step % STOP_CHECK_EVERY == 0 or step == plan.total_steps:
                # One all-reduce carries the loss and every rank's stop flag, so ranks that
                # got SIGTERM at different steps still stop at the same step.
                total, counted, stops = hvd.allreduce(
                    tf.stack([window_loss, float(window_steps), float(stop.requested)]),
                    op=hvd.Sum,
                    name="smdist.agree",
                ).numpy()
                if stops > 0:
                    write_checkpoint(step)
                    tf_training.say(f"stopped at step {step} on request")
                    return TERMINATED_EXIT_CODE
                last_loss = float(total / counted)
                now = time.perf_counter()
                if is_main and log_now:
                    seconds = max(now - window_started, 1e-9)
                    log_metrics(
                        step=step,
                        epoch=epoch + 1,
                        loss=last_loss,
                        samples_per_sec=window_steps * global_batch / seconds,
                    )
                window_loss, window_steps, window_started = tf.constant(0.0), 0, now
            if args.checkpoint_every and step % args.checkpoint_every == 0:
                write_checkpoint(step)

    if is_main and step > start_step:  # no metric line for steps this run did not take
        log_metrics(
            step=step,
            epoch=plan.epoch_of(max(step - 1, 0)) + 1,
            loss=last_loss,
            samples_per_sec=(step - start_step)
            * global_batch
            / max(time.perf_counter() - started, 1e-9),
        )
    tf_training.report_checksum(rank, model.get_weights())
    if is_main:
        saved = tf_training.save_saved_model(model, paths.model_dir(), is_chief=True)
        tf_training.say(f"model saved to {saved}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stop = StopRequest()  # before TensorFlow loads (seconds): a stop then still stops cleanly
    return train(args, stop)


if __name__ == "__main__":
    sys.exit(main())
