"""A small Keras classifier under TensorFlow 2's ParameterServerStrategy, ready for SageMaker.

Made for the TensorFlow estimator's ``distribution={"parameter_server": {"enabled": True}}``
and runs unchanged under the TF_CONFIG that SageMaker's TensorFlow toolkit writes for it
(``smdist.contract.parameter_server`` describes it): the first host is the ``master``, the
others ``worker`` tasks (port 2222), and every host also holds a ``ps`` task (port 2223) that
the toolkit itself starts before this script. The script runs once per host and takes the
role its TF_CONFIG task gives it:

- ``master`` (also ``chief``): the coordinator. It creates the model's variables on the
  parameter servers, schedules training steps onto the workers with a ``ClusterCoordinator``
  (each step: one ``--batch_size`` batch on one worker, gradients applied to the parameter
  servers asynchronously, so the learning rate is not scaled), prints the ``[metrics]`` lines,
  checkpoints every ``--checkpoint_every`` steps, resumes from the newest checkpoint, and saves
  a SavedModel to SM_MODEL_DIR/1. SIGTERM: it finishes the steps in flight, checkpoints and
  exits 143.
- ``worker``: serves steps (a ``tf.distribute.Server``) until the coordinator has finished,
  then exits 0 (see below). ``ps``: the same, as a CPU-only parameter server; the toolkit never
  runs the script as ps, a hand-written TF_CONFIG may.
- no TF_CONFIG (the toolkit writes none on a single host, and starts no parameter server): the
  same training loop in this one process, without parameter servers.

How a worker's script ends: a TF2 worker normally blocks forever in ``server.join()``, and the
toolkit runs this script as the worker host's training script, so the host would never finish.
The worker instead polls the coordinator's address (the master's port 2222, on which the
coordinator listens from the moment it connects until it exits) every second and exits 0 once
it has been up and is down again: the toolkit's own ``_wait_until_master_is_down`` idea, here
in the script. The coordinator only exits after the model is saved, so no worker or parameter
server leaves early. A coordinator that never comes up ends the wait after
SMDIST_PS_CHIEF_TIMEOUT seconds (default 1800) with exit 1. A worker cannot tell a finished
coordinator from a crashed one: the job's outcome is the master host's.

Data: ``*.npz`` from the train channel, or synthetic; the arrays are read by the coordinator
and travel inside the dataset function to every worker (fine for megabytes, not gigabytes),
and each worker shuffles them in its own order. ``--mixed_precision`` is accepted and ignored:
the coordinator cannot see the workers' GPUs, the model trains in float32. The estimator's
``--model_dir s3://...`` is accepted and ignored, the model goes to SM_MODEL_DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from smdist.contract import parameter_server
from smdist.runtime import checkpoints, paths, tf_training
from smdist.runtime.args import parse_training_args, tensorflow_arg_parser
from smdist.runtime.metrics import log_metrics
from smdist.runtime.stop import TERMINATED_EXIT_CODE, StopRequest
from smdist.runtime.training_data import plan_steps, training_arrays

CONFIG_ERROR_EXIT_CODE = 2
CHIEF_NEVER_UP_EXIT_CODE = 1
CHIEF_TIMEOUT_ENV = "SMDIST_PS_CHIEF_TIMEOUT"
DEFAULT_CHIEF_TIMEOUT = 1800.0
# The coordinator joins the workers at least this often (steps), so that SIGTERM is honoured
# soon even when neither logging nor checkpointing asks for a join.
MAX_STEPS_BETWEEN_JOINS = 20
COORDINATOR_ROLES = ("master", "chief")
SERVER_ROLES = ("worker", "ps")
COORDINATOR_DEVICE = (
    "/job:chief/replica:0/task:0/device:CPU:0"  # the coordinator, connected as chief
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return parse_training_args(argv, tensorflow_arg_parser())


def read_role(environ: Mapping[str, str]) -> tuple[str, int, dict[str, list[str]]]:
    """(role, task index, cluster) from TF_CONFIG; ("single", 0, {}) without one."""
    raw = environ.get("TF_CONFIG", "").strip()
    if not raw:
        return "single", 0, {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError:
        raise ValueError(f"TF_CONFIG is not JSON: {raw!r}") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError(f"TF_CONFIG needs 'cluster' and 'task' objects, got {raw!r}")
    role, index = task.get("type"), task.get("index", 0)
    if role not in COORDINATOR_ROLES + SERVER_ROLES:
        raise ValueError(f"TF_CONFIG task type {role!r}: expected one of master, worker, ps")
    if not isinstance(index, int) or not 0 <= index < len(cluster.get(role) or []):
        raise ValueError(f"TF_CONFIG task {task!r} is not a task of cluster {cluster!r}")
    coordinators = [job for job in COORDINATOR_ROLES if cluster.get(job)]
    if len(coordinators) != 1 or len(cluster[coordinators[0]]) != 1:
        raise ValueError(f"TF_CONFIG cluster {cluster!r}: expected exactly one master (or chief)")
    if not cluster.get("ps") or not cluster.get("worker"):
        raise ValueError(
            f"TF_CONFIG cluster {cluster!r} has no ps or no worker task: this script needs the "
            "parameter_server distribution on two or more hosts"
        )
    return role, index, cluster


def chief_cluster(cluster: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The cluster with the toolkit's ``master`` job named ``chief``.

    The toolkit names the coordinator ``master`` (TF1 Estimator / Cloud ML Engine convention).
    TensorFlow 2's ParameterServerStrategy accepts only chief/worker/ps/evaluator jobs (with
    TF 2.21, TFConfigClusterResolver reads the toolkit's TF_CONFIG, then the strategy raises
    "Disallowed task type found in cluster spec") and calls its coordinator "chief". So the
    script hands the strategy this renamed cluster through its own resolver and leaves
    TF_CONFIG as the toolkit wrote it: servers started from the toolkit's cluster (the ps
    tasks) take the coordinator's cluster when it connects.
    """
    return {("chief" if job == "master" else job): list(tasks) for job, tasks in cluster.items()}


def coordinator_address(cluster: Mapping[str, list[str]]) -> str:
    return (cluster.get("master") or cluster["chief"])[0]


# --- worker and ps ----------------------------------------------------------------------------


def serve(role: str, index: int, cluster: dict[str, list[str]], stop: StopRequest) -> int:
    """Serve this task until the coordinator has come and gone; returns the exit code."""
    if role == "ps":
        config = {"cluster": cluster, "task": {"type": "ps", "index": index}}
        parameter_server.start_server(config)  # CPU only, as the toolkit's parameter servers
    else:
        tf_training.prepare_tensorflow_environment()
        import tensorflow as tf

        tf_training.configure_gpus(tf)  # memory growth: a worker's GPU serves many steps
        tf.distribute.Server(
            tf.train.ClusterSpec(chief_cluster(cluster)),
            job_name=role,
            task_index=index,
            protocol="grpc",
            start=True,
        )
    address = cluster[role][index]
    master = coordinator_address(cluster)
    tf_training.say(f"{role}:{index} serving at {address} until the coordinator {master} ends")
    timeout = float(os.environ.get(CHIEF_TIMEOUT_ENV) or DEFAULT_CHIEF_TIMEOUT)
    outcome = parameter_server.wait_until_master_is_down(
        master, appear_timeout=timeout, poll_seconds=1.0, stop=lambda: stop.requested
    )
    if outcome == "stopped":
        tf_training.say(f"{role}:{index} stopping on {stop.signal_name}")
        return TERMINATED_EXIT_CODE
    if outcome == "never-up":
        tf_training.say(f"the coordinator {master} did not come up within {timeout:g} s")
        return CHIEF_NEVER_UP_EXIT_CODE
    tf_training.say(f"{role}:{index} done: the coordinator {master} has ended")
    return 0


# --- coordinator ------------------------------------------------------------------------------


def parameter_server_strategy(tf: Any, cluster: dict[str, list[str]]) -> Any:
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(chief_cluster(cluster)),
        task_type="chief",
        task_id=0,
        rpc_layer="grpc",
    )
    # The stable names came after the experimental ones (TF 2.4), which TF 2.21 still has.
    strategy_class = getattr(tf.distribute, "ParameterServerStrategy", None)
    return (strategy_class or tf.distribute.experimental.ParameterServerStrategy)(resolver)


def cluster_coordinator(tf: Any, strategy: Any) -> Any:
    coordinator = getattr(tf.distribute, "coordinator", None)
    return (coordinator or tf.distribute.experimental.coordinator).ClusterCoordinator(strategy)


def next_join(step: int, total: int, log_every: int, checkpoint_every: int) -> int:
    """The step after which the coordinator next waits for the workers."""
    end = min(step + MAX_STEPS_BETWEEN_JOINS, total)
    for every in (log_every, checkpoint_every):
        if every > 0:
            end = min(end, (step // every + 1) * every)
    return end


def train(args: argparse.Namespace, stop: StopRequest, cluster: dict[str, list[str]]) -> int:
    tf = tf_training.import_tensorflow()
    coordinator = None
    if cluster:
        strategy = parameter_server_strategy(tf, cluster)
        stop = reclaim_sigterm(stop)
        coordinator = cluster_coordinator(tf, strategy)
        where = (
            f"ParameterServerStrategy, {len(cluster['worker'])} worker(s), "
            f"{len(cluster['ps'])} parameter server(s)"
        )
    else:
        strategy = tf.distribute.get_strategy()  # the default strategy: this process alone
        where = "a single process (no TF_CONFIG: one host, no parameter servers)"

    data = training_arrays(args.samples, args.seed)
    plan = plan_steps(len(data.x), args.batch_size, args.epochs, args.max_steps)
    tf_training.say(
        f"tensorflow_parameter_server: {where}, batch {args.batch_size} per step, learning "
        f"rate {args.learning_rate:g}, data {data.source}, {plan.total_steps} step(s)"
    )

    tf.keras.utils.set_random_seed(args.seed)  # the same initial weights on every run
    with strategy.scope():  # variables land on the parameter servers (round robin)
        model = tf_training.build_classifier(tf, data.num_features, data.num_classes)
        optimizer = tf.keras.optimizers.SGD(learning_rate=args.learning_rate, momentum=0.9)
        # Built now so that a checkpoint can fill the optimizer's variables before step 1.
        optimizer.build(model.trainable_variables)
    checkpoint_dir = paths.checkpoint_dir()
    start_step = restore(model, optimizer, checkpoint_dir)
    # No global seed from here on: every worker's shuffle draws its own order (under this
    # strategy each worker gets the same InputContext, so no shard id tells them apart).
    tf.random.set_seed(None)

    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE
    )

    def dataset_fn(input_context: Any = None) -> Any:
        dataset = tf.data.Dataset.from_tensor_slices((data.x, data.y))
        dataset = dataset.shuffle(len(data.x), reshuffle_each_iteration=True).repeat()
        return dataset.batch(args.batch_size, drop_remainder=True).prefetch(2)

    if coordinator is not None:

        @tf.function
        def per_worker_dataset_fn() -> Any:
            return strategy.distribute_datasets_from_function(dataset_fn)

        iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))
    else:
        iterator = iter(dataset_fn())

    @tf.function
    def step_fn(iterator: Any) -> Any:
        def replica_fn(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(loss_fn(y, model(x, training=True)))
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            return loss

        x, y = next(iterator)
        losses = strategy.run(replica_fn, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

    def run_steps(count: int) -> list[float]:
        if coordinator is None:
            return [float(step_fn(iterator)) for _ in range(count)]
        results = [coordinator.schedule(step_fn, args=(iterator,)) for _ in range(count)]
        coordinator.join()  # every scheduled step has run, on whichever worker was free
        return [float(result.fetch()) for result in results]

    step, loss, steps_done = start_step, float("nan"), 0
    if start_step >= plan.total_steps:
        tf_training.say(tf_training.nothing_left(checkpoint_dir, start_step, plan, args))
    started = window_start = time.perf_counter()
    window_steps = 0
    while step < plan.total_steps:
        end = next_join(step, plan.total_steps, args.log_every, args.checkpoint_every)
        losses = run_steps(end - step)
        step, steps_done, window_steps = end, steps_done + len(losses), window_steps + len(losses)
        loss = sum(losses) / len(losses)
        if args.log_every and step % args.log_every == 0:
            now = time.perf_counter()
            log_metrics(
                step=step,
                epoch=plan.epoch_of(step - 1) + 1,
                loss=loss,
                samples_per_sec=window_steps * args.batch_size / max(now - window_start, 1e-9),
            )
            window_start, window_steps = now, 0
        if stop.requested:
            write_checkpoint(model, optimizer, step, checkpoint_dir)
            tf_training.say(f"stopped at step {step} on request")
            return TERMINATED_EXIT_CODE
        if args.checkpoint_every and step % args.checkpoint_every == 0:
            write_checkpoint(model, optimizer, step, checkpoint_dir)

    if steps_done:  # no metric line for steps this run did not take
        log_metrics(
            step=step,
            epoch=plan.epoch_of(step - 1) + 1,
            loss=loss,
            samples_per_sec=steps_done * args.batch_size / max(time.perf_counter() - started, 1e-9),
        )
    tf_training.report_checksum(0, model.get_weights())
    # The parameter servers hold the variables, and on SageMaker each host has its own disk:
    # the coordinator writes every file.
    saved = tf_training.save_saved_model(
        model, paths.model_dir(), is_chief=True, io_device=COORDINATOR_DEVICE
    )
    tf_training.say(f"model saved to {saved}")
    return 0


def restore(model: Any, optimizer: Any, checkpoint_dir: Any) -> int:
    """Load the newest checkpoint into the parameter servers' variables; returns its step."""
    found = checkpoints.latest_checkpoint(checkpoint_dir, tf_training.CHECKPOINT_SUFFIX)
    if found is None:
        return 0
    step, path = found
    state = tf_training.read_training_state(path)
    start = tf_training.restore_training_state(model, optimizer, state, source=str(path))
    tf_training.say(f"resuming from {path} (step {step})")
    return start


def write_checkpoint(model: Any, optimizer: Any, step: int, checkpoint_dir: Any) -> None:
    # The workers are joined: the parameter servers hold the weights of exactly `step` steps.
    state = tf_training.training_state(model, optimizer, step)
    path = checkpoints.save_checkpoint(
        checkpoint_dir,
        step,
        lambda target: tf_training.write_training_state(target, state),
        suffix=tf_training.CHECKPOINT_SUFFIX,
    )
    tf_training.say(f"checkpoint {path}")


def reclaim_sigterm(stop: StopRequest) -> StopRequest:
    """A StopRequest whose handler is installed now (TensorFlow may have installed its own
    while connecting), carrying a stop requested before."""
    renewed = StopRequest()
    renewed.requested = renewed.requested or stop.requested
    return renewed


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Before TensorFlow loads (seconds): a stop during start-up is honoured at the first join.
    stop = StopRequest()
    try:
        role, index, cluster = read_role(os.environ)
    except ValueError as error:
        tf_training.say(f"configuration error: {error}")
        return CONFIG_ERROR_EXIT_CODE
    if role in SERVER_ROLES:
        return serve(role, index, cluster, stop)
    return train(args, stop, cluster)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: every role holds a TensorFlow gRPC server (the coordinator's eager context
    # listens too), which TensorFlow cannot stop; interpreter teardown around it may hang.
    os._exit(code)
