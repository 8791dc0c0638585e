"""``kind: parameter_server`` on the local backend, as SageMaker's TensorFlow toolkit runs it.

A real ``smdist run`` of the example on emulated hosts. Each host runs its parameter server
(``python -m smdist.contract.parameter_server``, through ``parameter_server_host``), then the
ready script with the toolkit's TF_CONFIG (``smdist.contract.parameter_server``). The first host
coordinates and the others train: the loss falls, only the coordinator reports, checkpoints and
saves the model, each worker ends once the coordinator has, and every host's parameter server
serves until it is stopped with SIGTERM. The job completes with the coordinator's model, and
nothing outlives it. The same happens when the run is interrupted: the job stops, and no
host's parameter server is left behind.
"""

from __future__ import annotations

import json
import signal
import time

import pytest
from local_jobs import EXAMPLES, assert_nothing_left, smdist_run, tar_names
from multiprocess_runs import metric_lines

pytestmark = [pytest.mark.integration, pytest.mark.tf]
JOB = EXAMPLES / "tf_parameter_server.yaml"
# 512 samples in batches of 16, one epoch: 32 steps, at a learning rate under which the loss
# falls clearly within them (the example's 0.001 is too slow for so few).
TRAINING = {"samples": 512, "batch_size": 16, "learning_rate": 0.02, "epochs": 1,
            "log_every": 8, "checkpoint_every": 16}  # fmt: skip
STEPS = 512 // 16


def test_the_example_trains_on_emulated_hosts_with_a_parameter_server_each(tmp_path):
    # Three hosts: a coordinator and more than one training host (two hosts, the example's
    # own count, run in the interrupted job below). This job also carries what the toolkit's
    # steps by hand proved (test_parameter_server_runtime): the same two processes per host.
    hosts = 3
    settings = [item for key, value in TRAINING.items() for item in ("-H", f"{key}={value}")]
    run = smdist_run(JOB, tmp_path, "--hosts", str(hosts), *settings)
    assert run.returncode == 0, run.output
    assert "Completed" in run.output
    job_dir = run.job_dir()
    logs = {index: (job_dir / "logs" / f"algo-{index + 1}.log").read_text() for index in range(3)}
    coordinator, workers = logs[0], [logs[1], logs[2]]
    assert "ParameterServerStrategy, 2 worker(s), 3 parameter server(s)" in coordinator
    # The coordinator (algo-1) reports the training, and the loss falls over it.
    assert "algo-1     | [metrics] step=" in run.output
    metrics = metric_lines(coordinator)
    assert len(metrics) >= 3, coordinator
    assert metrics[-1]["step"] == STEPS
    assert metrics[-1]["loss"] < metrics[0]["loss"], metrics
    for index, worker in enumerate(workers):
        assert metric_lines(worker) == [], "only the coordinator prints metric lines"
        assert f"worker:{index} done: the coordinator" in worker, worker
    # Every host served as a parameter server until stopped with SIGTERM, after its script.
    for index in range(hosts):
        assert f"parameter server ps:{index} serving at" in logs[index], logs[index]
        assert f"parameter server ps:{index} stopping on SIGTERM" in logs[index], logs[index]
        assert f"parameter server ps:{index} stopping" in run.output, run.output

    # The coordinator saved the model (SavedModel, numbered version folder) and checkpoints.
    first, second = (job_dir / "hosts" / name for name in ("algo-1", "algo-2"))
    assert (first / "model" / "1" / "saved_model.pb").is_file()
    assert sorted(p.name for p in (first / "checkpoints").glob("checkpoint-*")) == [
        "checkpoint-000000016.npz",
        "checkpoint-000000032.npz",
    ]
    assert list((second / "model").iterdir()) == []
    model = job_dir / "output" / "model.tar.gz"
    assert [name for name in tar_names(model) if name != "."], "model.tar.gz is empty"
    assert json.loads((job_dir / "job.json").read_text())["status"] == "Completed"
    assert_nothing_left(tmp_path)


def test_an_interrupted_job_stops_every_hosts_parameter_server(tmp_path):
    # A metric line after every step: the first comes (and the job is interrupted) as soon as
    # training runs, and the coordinator sees the stop at the next step.
    process, log = smdist_run(
        JOB, tmp_path, "-H", "epochs=50", "-H", "log_every=1", start_only=True
    )
    deadline = time.monotonic() + 120
    while "[metrics] step=" not in log.read_text() and time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=120) == 1, log.read_text()
    assert "Stopped" in log.read_text()
    assert_nothing_left(tmp_path)
