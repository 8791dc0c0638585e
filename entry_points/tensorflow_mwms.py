"""Keras ``model.fit`` under TensorFlow's MultiWorkerMirroredStrategy, ready for SageMaker.

One process per host; every host is a TF_CONFIG "worker" and worker 0 is the chief. SageMaker
does not set TF_CONFIG for a plain multi-instance TensorFlow job, so the script builds it from
SM_HOSTS / SM_CURRENT_HOST when it is missing, and leaves one that is already set (by the
TensorFlow container's multi_worker_mirrored_strategy option, or by hand) untouched.

What it does on every worker, in order:
- TF_CONFIG, then the strategy with the collective implementation (SMDIST_COMMUNICATION) and
  a collective timeout (SMDIST_COLLECTIVE_TIMEOUT) so a lost worker cannot hang the job;
- mixed precision where the GPU supports it; the global batch is the per-replica
  --batch_size times the replicas in sync, the learning rate scales the same way;
- the model and optimizer state come from the chief: its newest checkpoint when there is one,
  else its fresh initialisation (one broadcast, so hosts whose checkpoint folder was not
  synced still agree);
- each worker reads its own part of every global batch (auto-shard policy DATA);
- every --checkpoint_every steps the chief writes a checkpoint; SIGTERM on any worker stops all
  of them at the same step, the chief checkpoints and every worker exits 143;
- at the end the chief prints the final metric line and saves a SavedModel to
  SM_MODEL_DIR/1; the other workers save to a temporary folder (TensorFlow's saving runs
  collectives on every worker) and delete it. Every worker prints its weights' checksum.

The TensorFlow estimator adds a ``--model_dir s3://...`` hyperparameter: it is accepted and
ignored, the model goes to SM_MODEL_DIR, which SageMaker uploads.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from smdist.runtime import checkpoints, paths, tf_training
from smdist.runtime.args import parse_training_args, tensorflow_arg_parser
from smdist.runtime.environments import ClusterEnvironmentError
from smdist.runtime.metrics import log_metrics
from smdist.runtime.stop import TERMINATED_EXIT_CODE, StopRequest
from smdist.runtime.tf_config import apply_tf_config, ensure_tf_config
from smdist.runtime.training_data import batch_indices, plan_steps, training_arrays

CONFIG_ERROR_EXIT_CODE = 2


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = tensorflow_arg_parser()
    args = parse_training_args(argv, parser)
    if args.smdist_communication not in tf_training.COMMUNICATION_CHOICES:
        parser.error(
            f"SMDIST_COMMUNICATION={args.smdist_communication!r}: use one of "
            f"{', '.join(tf_training.COMMUNICATION_CHOICES)}"
        )
    if args.smdist_collective_timeout < 0:
        parser.error(
            f"SMDIST_COLLECTIVE_TIMEOUT={args.smdist_collective_timeout}: use seconds >= 0 "
            "(0 keeps TensorFlow's default, no timeout)"
        )
    return args


def epoch_dataset(
    tf: Any, data: Any, seed: int, global_batch: int, epoch: int, first: int, end: int
) -> Any:
    """Global batches ``first .. end-1`` of one epoch; each worker keeps its own part."""
    indices = batch_indices(len(data.x), seed, global_batch, epoch, first, end).reshape(-1)
    dataset = tf.data.Dataset.from_tensor_slices((data.x[indices], data.y[indices]))
    dataset = dataset.batch(global_batch, drop_remainder=True)
    options = tf.data.Options()
    # DATA: every worker builds the same batches and keeps its replicas' slices of each; the
    # default (AUTO -> FILE) needs several input files and would fall back with a warning.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def restore_from_chief(
    tf: Any, strategy: Any, model: Any, optimizer: Any, directory: Any, is_chief: bool
) -> int:
    """Make every worker start from the chief's state; returns the step to resume from.

    One collective carries the step and every weight and optimizer variable, packed as one
    float64 vector: simple, and cheap for the small models these entry points train.
    """
    import numpy as np

    own = tf_training.training_state(model, optimizer, step=0)
    names = [name for name in own if name != "step"]
    header = 0.0  # the resume step, or -1 when the chief's checkpoint does not fit the model
    values = [own[name] for name in names]
    found = None
    if is_chief:
        found = checkpoints.latest_checkpoint(directory, tf_training.CHECKPOINT_SUFFIX)
    if found is not None:
        step, path = found
        loaded = tf_training.read_training_state(path)
        if sorted(loaded) == sorted(own) and all(
            np.shape(loaded[name]) == np.shape(own[name]) for name in names
        ):
            header = float(loaded["step"])
            values = [loaded[name] for name in names]
            tf_training.say(f"resuming from {path} (step {step})")
        else:
            header = -1.0
            tf_training.say(f"checkpoint {path} does not fit this model")
    vector = tf_training.pack_arrays([np.asarray([header]), *values])
    agreed = tf_training.sum_over_replicas(tf, strategy, vector, first_replica_only=True)
    if agreed[0] < 0:
        raise RuntimeError(
            f"the chief's newest checkpoint in {directory} was written for a different model "
            "or optimizer; delete it or point the checkpoint directory elsewhere"
        )
    arrays = tf_training.unpack_arrays(agreed[1:], values)
    state = dict(zip(names, arrays))  # unpack_arrays gives one array per name's value
    state["step"] = np.asarray(int(agreed[0]))
    return tf_training.restore_training_state(model, optimizer, state, source="the chief")


def training_control(tf: Any, **settings: Any) -> Any:
    """The Keras callback that checkpoints, logs metrics and turns SIGTERM into a clean stop."""

    class TrainingControl(tf.keras.callbacks.Callback):
        def __init__(
            self,
            strategy: Any,
            stop: StopRequest,
            vote: tf_training.StopVote,
            is_chief: bool,
            start_step: int,
            steps_per_epoch: int,
            global_batch: int,
            checkpoint_every: int,
            log_every: int,
            checkpoint_dir: Any,
        ) -> None:
            super().__init__()
            self.strategy = strategy
            self.stop = stop
            self.vote = vote
            self.is_chief = is_chief
            self.step = start_step
            self.steps_per_epoch = steps_per_epoch
            self.global_batch = global_batch
            self.checkpoint_every = checkpoint_every
            self.log_every = log_every
            self.checkpoint_dir = checkpoint_dir
            self.stopped = False
            self.loss = float("nan")
            self.started = time.perf_counter()
            self.steps_done = 0
            self._window_start = self.started
            self._window_steps = 0

        def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
            if self.stop.requested:
                self.vote.raise_hand()

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            self.step += 1
            self.steps_done += 1
            self._window_steps += 1
            # Keras sums each replica's running mean loss across replicas under multi-worker
            # strategies (its "auto" reduction); the mean over the global batch is the sum
            # divided by the replicas, which all see equal batches.
            replica_sum = float((logs or {}).get("loss", float("nan")))
            self.loss = replica_sum / self.strategy.num_replicas_in_sync
            # Every worker sees the same tally at the same step, so they all stop together.
            if float((logs or {}).get(tf_training.STOP_VOTES, 0.0)) > 0:
                self.write_checkpoint()
                self.stopped = True
                self.model.stop_training = True
                return
            if self.checkpoint_every and self.step % self.checkpoint_every == 0:
                self.write_checkpoint()
            if self.is_chief and self.log_every and self.step % self.log_every == 0:
                now = time.perf_counter()
                log_metrics(
                    step=self.step,
                    epoch=(self.step - 1) // self.steps_per_epoch + 1,
                    loss=self.loss,
                    samples_per_sec=self._window_steps
                    * self.global_batch
                    / max(now - self._window_start, 1e-9),
                )
                self._window_start, self._window_steps = now, 0

        def write_checkpoint(self) -> None:
            state = tf_training.training_state(self.model, self.model.optimizer, self.step)
            if self.is_chief:
                path = checkpoints.save_checkpoint(
                    self.checkpoint_dir,
                    self.step,
                    lambda target: tf_training.write_training_state(target, state),
                    suffix=tf_training.CHECKPOINT_SUFFIX,
                )
                tf_training.say(f"checkpoint {path}")

    return TrainingControl(**settings)


def reclaim_sigterm(stop: StopRequest) -> StopRequest:
    """A StopRequest whose handler is installed now, carrying a stop requested before."""
    renewed = StopRequest()
    renewed.requested = renewed.requested or stop.requested
    return renewed


def train(args: argparse.Namespace, stop: StopRequest) -> int:
    tf = tf_training.import_tensorflow()
    strategy = tf_training.multi_worker_strategy(
        tf, args.smdist_communication, args.smdist_collective_timeout
    )
    # The strategy's coordination service installs TensorFlow's own SIGTERM handler, which
    # only records the signal for TensorFlow's failure handling: take the signal back.
    stop = reclaim_sigterm(stop)
    rank = tf_training.worker_rank(strategy)
    is_chief = rank == 0
    tf_training.configure_gpus(tf)
    policy = tf_training.select_precision(tf, args.mixed_precision)

    data = training_arrays(args.samples, args.seed)
    replicas = strategy.num_replicas_in_sync
    global_batch = args.batch_size * replicas
    plan = plan_steps(len(data.x), global_batch, args.epochs, args.max_steps)
    if is_chief:
        tf_training.say(
            f"tensorflow_mwms: MultiWorkerMirroredStrategy, {replicas} replica(s), global batch "
            f"{global_batch}, learning rate {args.learning_rate * replicas:g}, precision "
            f"{policy}, data {data.source}, {plan.total_steps} step(s)"
        )

    vote = tf_training.StopVote(tf)
    with strategy.scope():
        tf.keras.utils.set_random_seed(args.seed)
        model = tf_training.with_stop_vote(
            tf, tf_training.build_classifier(tf, data.num_features, data.num_classes), vote
        )
        model.compile(
            optimizer=tf.keras.optimizers.SGD(
                learning_rate=args.learning_rate * replicas, momentum=0.9
            ),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        # Build the optimizer's variables now so a checkpoint can fill them before step 1.
        model.optimizer.build(model.trainable_variables)

    checkpoint_dir = paths.checkpoint_dir()
    start_step = restore_from_chief(tf, strategy, model, model.optimizer, checkpoint_dir, is_chief)
    control = training_control(
        tf,
        strategy=strategy,
        stop=stop,
        vote=vote,
        is_chief=is_chief,
        start_step=start_step,
        steps_per_epoch=plan.steps_per_epoch,
        global_batch=global_batch,
        checkpoint_every=args.checkpoint_every,
        log_every=args.log_every,
        checkpoint_dir=checkpoint_dir,
    )
    if start_step >= plan.total_steps:
        if is_chief:
            tf_training.say(tf_training.nothing_left(checkpoint_dir, start_step, plan, args))
    # One fit() per epoch segment: a resumed job starts mid-epoch at exactly its step.
    for epoch, first, end in plan.epoch_segments(start_step):
        dataset = epoch_dataset(tf, data, args.seed, global_batch, epoch, first, end)
        model.fit(
            dataset,
            initial_epoch=epoch,
            epochs=epoch + 1,
            steps_per_epoch=end - first,
            callbacks=[control],
            verbose=0,
        )
        if control.stopped:
            tf_training.say(f"stopped at step {control.step} on request")
            return TERMINATED_EXIT_CODE

    elapsed = time.perf_counter() - control.started
    if is_chief and control.steps_done:  # no metric line for steps this run did not take
        log_metrics(
            step=control.step,
            epoch=plan.epoch_of(max(control.step - 1, 0)) + 1,
            loss=control.loss,
            samples_per_sec=control.steps_done * global_batch / max(elapsed, 1e-9),
        )
    tf_training.report_checksum(rank, model.get_weights())
    saved = tf_training.save_saved_model(model, paths.model_dir(), is_chief)
    if saved is not None:
        tf_training.say(f"model saved to {saved}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Before TensorFlow loads (seconds): a stop during start-up is honoured at the first step.
    stop = StopRequest()
    try:
        apply_tf_config(ensure_tf_config(os.environ))
    except ClusterEnvironmentError as error:
        tf_training.say(f"configuration error: {error}")
        return CONFIG_ERROR_EXIT_CODE
    return train(args, stop)


if __name__ == "__main__":
    sys.exit(main())
