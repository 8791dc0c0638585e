"""tensorflow_mwms.py with real MultiWorkerMirroredStrategy workers on this machine.

Two workers stand in for two SageMaker hosts: each has its own opt/ml folders and SM_*
variables and its own port on 127.0.0.1 (MWMS binds 0.0.0.0:<port>, so emulated hosts on one
machine need distinct ports).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pytest
from multiprocess_runs import (
    ENTRY_POINTS,
    PYTHON,
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


def test_two_workers_train_agree_and_save_once(tmp_path):
    runs, bases = start_workers(
        tmp_path,
        "train",
        [
            "--epochs",
            "3",
            "--checkpoint_every",
            "20",
            "--log_every",
            "4",
            "--model_dir",
            "s3://bucket/job/model",
        ],
    )
    codes = wait_all(runs, TIMEOUT)
    assert codes == [0, 0], describe(runs)
    chief, worker = (run.output for run in runs)

    assert "2 replica(s), global batch 32" in chief
    metrics = metric_lines(chief)
    assert len(metrics) >= 3, chief
    assert metrics[-1]["step"] == 3 * (512 // 32)
    assert metrics[-1]["loss"] < metrics[0]["loss"], metrics
    assert metric_lines(worker) == [], "only the chief prints metric lines"

    checksums = {**weight_checksums(chief), **weight_checksums(worker)}
    assert sorted(checksums) == [0, 1], describe(runs)
    assert checksums[0] == checksums[1], "workers ended with different weights"

    # The model lands once, in the chief's model directory, as a SavedModel.
    assert (bases[0] / "model" / "1" / "saved_model.pb").is_file()
    assert list((bases[1] / "model").iterdir()) == []
    # Checkpoints: written by the chief only, newest two kept.
    assert checkpoint_steps(bases[0] / "checkpoints") == [20, 40]
    assert list((bases[1] / "checkpoints").iterdir()) == []


def test_workers_shard_each_global_batch(tmp_path):
    """Two workers with batch b reach the weights one worker reaches with batch 2b.

    Holds only if the two workers read disjoint halves of every global batch: had both read the
    same samples, the averaged gradient would differ. TF_CONFIG is built from SM_HOSTS here.
    """
    steps = ["--epochs", "1", "--checkpoint_every", "16", "--log_every", "0"]
    runs, bases = start_workers(
        tmp_path, "pair", steps, explicit_tf_config=False, settings={"SMDIST_COMMUNICATION": "ring"}
    )
    single_base = tmp_path / "single" / "opt" / "ml"
    single_env = sagemaker_host(single_base, ["algo-1"], "algo-1")
    # A lone process outside SageMaker: no host list, so no TF_CONFIG and no server to reach.
    del single_env["SM_HOSTS"], single_env["SM_CURRENT_HOST"]
    single = start(
        [PYTHON, str(SCRIPT), *COMMON_ARGS, *steps, "--batch_size", "32", "--learning_rate", "0.1"],
        tmp_path / "single.log",
        clean_environ(single_env),
    )
    codes = wait_all([*runs, single], TIMEOUT)
    assert codes == [0, 0, 0], describe([*runs, single])
    assert "2 replica(s), global batch 32, learning rate 0.1" in runs[0].output
    assert "1 replica(s), global batch 32, learning rate 0.1" in single.output

    pair_state = np.load(bases[0] / "checkpoints" / "checkpoint-000000016.npz")
    single_state = np.load(single_base / "checkpoints" / "checkpoint-000000016.npz")
    weight_names = sorted(name for name in pair_state.files if name.startswith("model_"))
    assert weight_names
    for name in weight_names:
        np.testing.assert_allclose(pair_state[name], single_state[name], rtol=1e-4, atol=1e-5)


def test_sigterm_checkpoints_then_resume_continues(tmp_path):
    long_run = ["--epochs", "100", "--checkpoint_every", "5", "--log_every", "5"]
    runs, bases = start_workers(tmp_path, "first", long_run)
    chief_checkpoints = bases[0] / "checkpoints"
    wait_for(lambda: bool(checkpoint_steps(chief_checkpoints)), TIMEOUT, "a checkpoint", runs)
    # SageMaker signals every host; signalling one worker shows the others follow it.
    runs[1].process.send_signal(signal.SIGTERM)
    codes = wait_all(runs, TIMEOUT)
    assert codes == [143, 143], describe(runs)
    stopped_at = checkpoint_steps(chief_checkpoints)[-1]
    assert f"stopped at step {stopped_at} on request" in runs[0].output
    assert not (bases[0] / "model" / "1").exists(), "a stopped job must not save a final model"

    # Only the chief's folder has the checkpoint; the other worker gets it by broadcast.
    runs, bases = start_workers(tmp_path, "second", [*long_run, "--max_steps", str(stopped_at + 6)])
    codes = wait_all(runs, TIMEOUT)
    assert codes == [0, 0], describe(runs)
    chief = runs[0].output
    assert f"(step {stopped_at})" in chief
    metrics = metric_lines(chief)
    assert metrics[0]["step"] > stopped_at, "the resumed run began again from step 0"
    assert metrics[-1]["step"] == stopped_at + 6
    checksums = {**weight_checksums(chief), **weight_checksums(runs[1].output)}
    assert checksums[0] == checksums[1]


def test_a_rerun_whose_checkpoint_is_at_the_end_trains_nothing_and_says_so(tmp_path):
    """One process (a one-host job), run twice on the same host folder."""
    base = tmp_path / "opt" / "ml"
    environ = sagemaker_host(base, ["algo-1"], "algo-1")
    del environ["SM_HOSTS"], environ["SM_CURRENT_HOST"]  # no TF_CONFIG: a world of one
    args = [*COMMON_ARGS, "--batch_size", "32", "--epochs", "1", "--checkpoint_every", "16"]
    runs = []
    for name in ("first", "again"):
        run = start([PYTHON, str(SCRIPT), *args], tmp_path / f"{name}.log", clean_environ(environ))
        assert wait_all([run], TIMEOUT) == [0], describe([run])
        runs.append(run)
    first, again = (run.output for run in runs)
    assert metric_lines(first)[-1]["step"] == 16
    assert metric_lines(again) == [], again  # no line for steps it did not take
    assert (
        f"nothing left to train: the checkpoint restored from "
        f"{base / 'checkpoints' / 'checkpoint-000000016.npz'} is at epoch 1 of 1 (step 16)"
    ) in again
    assert "model saved to" in again


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
