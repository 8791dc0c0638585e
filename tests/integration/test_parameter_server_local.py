"""``kind: parameter_server`` on the local backend, as SageMaker's TensorFlow toolkit runs it.

A real ``smdist run`` of the example on emulated hosts. Each host runs its parameter server,
then the ready script with the toolkit's TF_CONFIG (``smdist.contract.parameter_server_host``).
The first host coordinates and the others train. The job completes with the coordinator's
model, and nothing outlives it. The same happens when the run is interrupted: the job stops,
and no host's parameter server is left behind.
"""

from __future__ import annotations

import json
import signal
import time

import pytest
from local_jobs import EXAMPLES, SMALL, assert_nothing_left, smdist_run, tar_names

pytestmark = [pytest.mark.integration, pytest.mark.tf]
JOB = EXAMPLES / "tf_parameter_server.yaml"


def test_the_example_trains_on_emulated_hosts_with_a_parameter_server_each(tmp_path):
    # Three hosts: a coordinator and more than one training host (two hosts, the example's
    # own count, run in the interrupted job below).
    hosts = 3
    run = smdist_run(JOB, tmp_path, "--hosts", str(hosts), *SMALL)
    assert run.returncode == 0, run.output
    assert "Completed" in run.output
    # The coordinator (algo-1) reports the training; every host served as a parameter server.
    assert "algo-1     | [metrics] step=" in run.output
    for index in range(hosts):
        assert f"parameter server ps:{index} stopping" in run.output, run.output
    model = run.job_dir() / "output" / "model.tar.gz"
    assert [name for name in tar_names(model) if name != "."], "model.tar.gz is empty"
    assert json.loads((run.job_dir() / "job.json").read_text())["status"] == "Completed"
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
