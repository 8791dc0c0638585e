"""tensorflow_mwms.py with real MultiWorkerMirroredStrategy workers on this machine.

Two workers stand in for two SageMaker hosts: each has its own opt/ml folders and SM_*
variables and its own port on 127.0.0.1 (MWMS binds 0.0.0.0:<port>, so emulated hosts on one
machine need distinct ports).
"""

from __future__ import annotations

import json
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from multiprocess_runs import (
    ENTRY_POINTS,
    PYTHON,
    Run,
    clean_environ,
    describe,
    metric_lines,
    sagemaker_host,
    start,
    wait_all,
    wait_for,
    weight_checksums,
)

from smdist.backends.local.hosts.shared.ports import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.tf]

SCRIPT = ENTRY_POINTS / "tensorflow_mwms.py"
HOSTS = ["algo-1", "algo-2"]
TIMEOUT = 240
# The stopped-then-resumed workers and the lone process serve four tests on one xdist worker.
SHARED = "tf-mwms-shared"
# Small and quick to learn; two busy cores run two TensorFlow processes.
COMMON_ARGS = ["--samples", "512", "--batch_size", "16", "--learning_rate", "0.05"]


def checkpoint_steps(directory: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1].split(".")[0]) for p in directory.glob("checkpoint-*"))


def start_workers(
    tmp_path: Path,
    name: str,
    args: list[str],
    explicit_tf_config: bool = True,
    settings: dict[str, str] | None = None,
):
    """Start one tensorflow_mwms.py per emulated host; returns the runs and the host folders.

    ``settings``: smdist's SMDIST_* variables, which reach the entry point in its environment.
    """
    ports = free_ports(len(HOSTS))
    runs, bases = [], []
    for index, host in enumerate(HOSTS):
        base = tmp_path / host / "opt" / "ml"
        environ = {**sagemaker_host(base, HOSTS, host), **(settings or {})}
        if explicit_tf_config:
            environ["TF_CONFIG"] = json.dumps(
                {
                    "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                    "task": {"type": "worker", "index": index},
                }
            )
        else:
            # No TF_CONFIG: the entry point builds it from SM_HOSTS / SM_CURRENT_HOST.
            environ["SM_HOSTS"] = json.dumps(["127.0.0.1", "127.0.0.2"])
            environ["SM_CURRENT_HOST"] = f"127.0.0.{index + 1}"
            environ["SMDIST_TF_PORTS"] = ",".join(str(port) for port in ports)
        command = [PYTHON, str(SCRIPT), *COMMON_ARGS, *args]
        runs.append(start(command, tmp_path / f"{name}-{host}.log", clean_environ(environ)))
        bases.append(base)
    return runs, bases


STEPS_PER_EPOCH = 512 // (2 * 16)
# Every job here that checkpoints does so every 8 steps: the stopped pair's first checkpoint and
# the lone process's first are the same step of the same training (test_workers_shard_...).
CHECKPOINT_EVERY = 8


@dataclass(frozen=True)
class StoppedThenResumed:
    """Two workers stopped by SIGTERM to one of them, what they had left when they ended, and
    the two that resumed them to the end of their epochs."""

    stopped: list[Run]
    stopped_codes: list[int]
    stopped_at: int  # the chief's newest checkpoint's step
    model_left: bool
    resumed: list[Run]
    resumed_codes: list[int]
    bases: list[Path]
    epochs: int  # the resumed workers'
    first_checkpoint: Path  # a copy of the stopped chief's first (step CHECKPOINT_EVERY)


@pytest.fixture(scope="module")
def stopped_then_resumed(tmp_path_factory: pytest.TempPathFactory) -> StoppedThenResumed:
    """Made once for the tests that read it (they share an xdist group).

    The stopped workers are also the pair of test_workers_shard_each_global_batch: they build
    TF_CONFIG from SM_HOSTS (the resumed ones get it explicitly) and use ring collectives, and
    their chief's first checkpoint (step CHECKPOINT_EVERY, from a fresh start) is kept aside.
    """
    tmp_path = tmp_path_factory.mktemp("stopped-then-resumed")
    # As SageMaker's TensorFlow estimator passes it: accepted and ignored.
    args = ["--checkpoint_every", str(CHECKPOINT_EVERY), "--log_every", "4",
            "--model_dir", "s3://bucket/job/model"]  # fmt: skip
    runs, bases = start_workers(
        tmp_path,
        "first",
        ["--epochs", "100", *args],
        explicit_tf_config=False,
        settings={"SMDIST_COMMUNICATION": "ring"},
    )
    chief_checkpoints = bases[0] / "checkpoints"
    wait_for(lambda: bool(checkpoint_steps(chief_checkpoints)), TIMEOUT, "a checkpoint", runs)
    # Written atomically; the newest two are kept, so it is still there (and whole) now.
    first_checkpoint = tmp_path / "first-checkpoint.npz"
    shutil.copy(chief_checkpoints / f"checkpoint-{CHECKPOINT_EVERY:09d}.npz", first_checkpoint)
    # SageMaker signals every host; signalling one worker shows the others follow it.
    runs[1].process.send_signal(signal.SIGTERM)
    stopped_codes = wait_all(runs, TIMEOUT)
    stopped_at = checkpoint_steps(chief_checkpoints)[-1]
    model_left = (bases[0] / "model" / "1").exists()
    # Two checkpoints after the stop (the newest two kept are then the resumed run's), and at
    # least two epochs: the loss falls over them.
    epochs = max(2, -(-(stopped_at + 2 * CHECKPOINT_EVERY) // STEPS_PER_EPOCH))
    # Only the chief's folder has the checkpoint; the other worker gets it by broadcast.
    resumed, bases = start_workers(tmp_path, "second", ["--epochs", str(epochs), *args])
    resumed_codes = wait_all(resumed, TIMEOUT)
    return StoppedThenResumed(
        runs,
        stopped_codes,
        stopped_at,
        model_left,
        resumed,
        resumed_codes,
        bases,
        epochs,
        first_checkpoint,
    )


@pytest.mark.xdist_group(SHARED)
def test_two_workers_train_agree_and_save_once(stopped_then_resumed: StoppedThenResumed):
    runs, bases = stopped_then_resumed.resumed, stopped_then_resumed.bases
    assert stopped_then_resumed.resumed_codes == [0, 0], describe(runs)
    chief, worker = (run.output for run in runs)

    assert "2 replica(s), global batch 32" in chief
    # The loss fell over the whole training, across the resume.
    metrics = metric_lines(stopped_then_resumed.stopped[0].output) + metric_lines(chief)
    assert len(metrics) >= 3, chief
    last_step = stopped_then_resumed.epochs * STEPS_PER_EPOCH
    assert metrics[-1]["step"] == last_step
    assert metrics[-1]["loss"] < metrics[0]["loss"], metrics
    for run in (stopped_then_resumed.stopped[1], runs[1]):
        assert metric_lines(run.output) == [], "only the chief prints metric lines"

    checksums = {**weight_checksums(chief), **weight_checksums(worker)}
    assert sorted(checksums) == [0, 1], describe(runs)
    assert checksums[0] == checksums[1], "workers ended with different weights"

    # The model lands once, in the chief's model directory, as a SavedModel.
    assert (bases[0] / "model" / "1" / "saved_model.pb").is_file()
    assert list((bases[1] / "model").iterdir()) == []
    # Checkpoints: written by the chief only, newest two kept (the stopped run's among them).
    written = list(range(CHECKPOINT_EVERY, last_step + 1, CHECKPOINT_EVERY))
    assert checkpoint_steps(bases[0] / "checkpoints") == written[-2:]
    assert list((bases[1] / "checkpoints").iterdir()) == []


@pytest.mark.xdist_group(SHARED)
def test_sigterm_checkpoints_then_resume_continues(stopped_then_resumed: StoppedThenResumed):
    runs, stopped_at = stopped_then_resumed.stopped, stopped_then_resumed.stopped_at
    assert stopped_then_resumed.stopped_codes == [143, 143], describe(runs)
    assert f"stopped at step {stopped_at} on request" in runs[0].output
    assert not stopped_then_resumed.model_left, "a stopped job must not save a final model"

    runs = stopped_then_resumed.resumed
    assert stopped_then_resumed.resumed_codes == [0, 0], describe(runs)
    chief = runs[0].output
    assert f"(step {stopped_at})" in chief
    metrics = metric_lines(chief)
    assert metrics[0]["step"] > stopped_at, "the resumed run began again from step 0"
    checksums = {**weight_checksums(chief), **weight_checksums(runs[1].output)}
    assert checksums[0] == checksums[1]


@dataclass(frozen=True)
class Alone:
    """One process (a one-host job, a world of one) that trained one epoch with batch 32."""

    run: Run
    code: int
    folder: Path
    environ: dict[str, str]
    args: list[str]

    @property
    def base(self) -> Path:
        return self.folder / "opt" / "ml"


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> Alone:
    """Made once for the two tests that read it (they share an xdist group, SHARED)."""
    folder = tmp_path_factory.mktemp("alone")
    environ = sagemaker_host(folder / "opt" / "ml", ["algo-1"], "algo-1")
    # A lone process outside SageMaker: no host list, so no TF_CONFIG and no server to reach.
    del environ["SM_HOSTS"], environ["SM_CURRENT_HOST"]
    environ = clean_environ(environ)
    args = [*COMMON_ARGS, "--batch_size", "32", "--learning_rate", "0.1", "--epochs", "1",
            "--checkpoint_every", str(CHECKPOINT_EVERY)]  # fmt: skip
    run = start([PYTHON, str(SCRIPT), *args, "--log_every", "0"], folder / "first.log", environ)
    [code] = wait_all([run], TIMEOUT)
    return Alone(run, code, folder, environ, args)


@pytest.mark.xdist_group(SHARED)
def test_workers_shard_each_global_batch(
    stopped_then_resumed: StoppedThenResumed, alone: Alone
) -> None:
    """Two workers with batch b reach the weights one worker reaches with batch 2b.

    Holds only if the two workers read disjoint halves of every global batch: had both read the
    same samples, the averaged gradient would differ. The two workers are the stopped job's
    (TF_CONFIG built from SM_HOSTS, ring collectives), compared at their first checkpoint.
    """
    pair = stopped_then_resumed.stopped
    assert alone.code == 0, describe([alone.run])
    assert "2 replica(s), global batch 32, learning rate 0.1" in pair[0].output
    assert "1 replica(s), global batch 32, learning rate 0.1" in alone.run.output

    pair_state = np.load(stopped_then_resumed.first_checkpoint)
    single_state = np.load(alone.base / "checkpoints" / f"checkpoint-{CHECKPOINT_EVERY:09d}.npz")
    assert int(pair_state["step"]) == int(single_state["step"]) == CHECKPOINT_EVERY
    weight_names = sorted(name for name in pair_state.files if name.startswith("model_"))
    assert weight_names
    for name in weight_names:
        np.testing.assert_allclose(pair_state[name], single_state[name], rtol=1e-4, atol=1e-5)


@pytest.mark.xdist_group(SHARED)
def test_a_rerun_whose_checkpoint_is_at_the_end_trains_nothing_and_says_so(alone: Alone):
    """The lone process's job, run again on the same host folder (metric lines on this time)."""
    assert alone.code == 0, describe([alone.run])
    assert metric_lines(alone.run.output)[-1]["step"] == 16
    again = start([PYTHON, str(SCRIPT), *alone.args, "--log_every", "4"],
                  alone.folder / "again.log", alone.environ)  # fmt: skip
    assert wait_all([again], TIMEOUT) == [0], describe([again])
    assert metric_lines(again.output) == [], again.output  # no line for steps it did not take
    assert (
        f"nothing left to train: the checkpoint restored from "
        f"{alone.base / 'checkpoints' / 'checkpoint-000000016.npz'} is at epoch 1 of 1 (step 16)"
    ) in again.output
    assert "model saved to" in again.output


def test_collective_timeout_ends_a_job_whose_peer_hangs(tmp_path):
    """A frozen worker (SIGSTOP) makes the chief's collectives time out instead of hang."""
    long_run = ["--epochs", "100", "--checkpoint_every", "5"]
    runs, bases = start_workers(
        tmp_path, "hang", long_run, settings={"SMDIST_COLLECTIVE_TIMEOUT": "5"}
    )
    chief_checkpoints = bases[0] / "checkpoints"
    wait_for(lambda: bool(checkpoint_steps(chief_checkpoints)), TIMEOUT, "a checkpoint", runs)
    runs[1].process.send_signal(signal.SIGSTOP)
    try:
        # Without the timeout the chief would wait forever and this wait would fail.
        code = runs[0].wait(TIMEOUT)
    finally:
        runs[1].kill()
    assert code not in (0, None), describe(runs)
    assert "DeadlineExceeded" in runs[0].output or "timed out" in runs[0].output.lower(), describe(
        runs
    )


def test_unknown_collective_implementation_is_a_configuration_error(tmp_path):
    environ = clean_environ(sagemaker_host(tmp_path / "opt" / "ml", ["algo-1"], "algo-1"))
    environ["SMDIST_COMMUNICATION"] = "mpi"
    run = start([PYTHON, str(SCRIPT)], tmp_path / "bad.log", environ)
    assert wait_all([run], TIMEOUT) == [2]
    assert "SMDIST_COMMUNICATION='mpi' is not valid: use one of auto, ring, nccl" in run.output
