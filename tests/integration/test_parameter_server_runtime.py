"""The parameter_server distribution by hand: smdist.contract.parameter_server and
tensorflow_parameter_server.py as SageMaker's TensorFlow toolkit starts them, without a backend.

Two emulated hosts on 127.0.0.1, each as the toolkit runs one: its parameter server first
(``python -m smdist.contract.parameter_server``), then the entry point with the host's TF_CONFIG.
The toolkit's ports (2222 for master/worker, 2223 for ps) become free ports here, through
``tf_config``'s address function: TensorFlow servers bind 0.0.0.0:<port>, so hosts sharing a
machine need distinct ports. The unit tests of ``tf_config`` need no TensorFlow.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
from pathlib import Path

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
)

from smdist.backends.local.hosts.shared.ports import free_ports
from smdist.contract.parameter_server import (
    MASTER_PORT,
    PS_PORT,
    TF_CONFIG_ENV,
    ps_config_from_environ,
    tf_config,
)

SCRIPT = ENTRY_POINTS / "tensorflow_parameter_server.py"
TIMEOUT = 120
# 512 samples in batches of 16, two epochs: 64 steps, a few seconds of training on two cores.
ARGS = [
    "--samples",
    "512",
    "--batch_size",
    "16",
    "--learning_rate",
    "0.02",
    "--epochs",
    "2",
    "--log_every",
    "8",
    "--checkpoint_every",
    "32",
    "--model_dir",
    "s3://bucket/job/model",  # the estimator's; accepted and ignored
]
STEPS = 2 * (512 // 16)

needs_tensorflow = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("tensorflow", "tf_keras")),
    reason="tensorflow and tf_keras not installed (.ci/install-tensorflow installs them)",
)


# --- tf_config: the toolkit's layout (_build_tf_config_for_ps) ---------------------------------


def test_one_host_is_a_lone_master_without_parameter_servers():
    assert tf_config(["algo-1"], "algo-1") == {
        "cluster": {"master": ["algo-1:2222"]},
        "environment": "cloud",
        "task": {"index": 0, "type": "master"},
    }
    with pytest.raises(ValueError, match="Cannot have a ps task"):
        tf_config(["algo-1"], "algo-1", ps_task=True)


def test_two_hosts_match_the_toolkit_byte_for_byte():
    hosts = ["host1", "host2"]
    cluster = (
        '{"cluster": {"master": ["host1:2222"], "ps": ["host1:2223", "host2:2223"], '
        '"worker": ["host2:2222"]}, "environment": "cloud", '
    )
    # The strings the toolkit's own tests expect (test_train_distributed_master / _worker).
    assert (
        json.dumps(tf_config(hosts, "host1")) == cluster + '"task": {"index": 0, "type": "master"}}'
    )
    assert (
        json.dumps(tf_config(hosts, "host2")) == cluster + '"task": {"index": 0, "type": "worker"}}'
    )
    assert tf_config(hosts, "host1", ps_task=True)["task"] == {"index": 0, "type": "ps"}
    assert tf_config(hosts, "host2", ps_task=True)["task"] == {"index": 1, "type": "ps"}


def test_three_hosts_one_master_two_workers_three_parameter_servers():
    hosts = ["algo-1", "algo-2", "algo-3"]
    cluster = {
        "master": ["algo-1:2222"],
        "ps": ["algo-1:2223", "algo-2:2223", "algo-3:2223"],
        "worker": ["algo-2:2222", "algo-3:2222"],
    }
    tasks = {host: tf_config(hosts, host)["task"] for host in hosts}
    assert tasks == {
        "algo-1": {"index": 0, "type": "master"},
        "algo-2": {"index": 0, "type": "worker"},
        "algo-3": {"index": 1, "type": "worker"},
    }
    for host in hosts:
        assert tf_config(hosts, host)["cluster"] == cluster
        assert tf_config(hosts, host)["environment"] == "cloud"
        assert tf_config(hosts, host, ps_task=True)["task"] == {
            "index": hosts.index(host),
            "type": "ps",
        }


def test_address_function_and_ports_replace_host_port():
    seen = []

    def address(host: str, port: int) -> str:
        seen.append((host, port))
        return f"127.0.0.1:{port + 10 * int(host[-1])}"

    config = tf_config(["algo-1", "algo-2"], "algo-2", port=9000, ps_port=9001, address=address)
    assert config["cluster"] == {
        "master": ["127.0.0.1:9010"],
        "ps": ["127.0.0.1:9011", "127.0.0.1:9021"],
        "worker": ["127.0.0.1:9020"],
    }
    assert sorted(set(seen)) == [
        ("algo-1", 9000),
        ("algo-1", 9001),
        ("algo-2", 9000),
        ("algo-2", 9001),
    ]


def test_unknown_current_host_is_refused():
    with pytest.raises(ValueError, match="not one of the hosts"):
        tf_config(["algo-1", "algo-2"], "algo-3")


def test_parameter_server_config_from_the_environment():
    hosts = json.dumps(["algo-1", "algo-2"])
    from_hosts = ps_config_from_environ({"SM_HOSTS": hosts, "SM_CURRENT_HOST": "algo-2"})
    assert from_hosts == tf_config(["algo-1", "algo-2"], "algo-2", ps_task=True)
    assert from_hosts["cluster"]["ps"][1] == f"algo-2:{PS_PORT}"
    # One host: the toolkit starts no parameter server.
    assert ps_config_from_environ({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"}) is None
    # An explicit config wins over SM_HOSTS.
    explicit = tf_config(["a", "b"], "b", ps_task=True, address=lambda h, p: f"127.0.0.1:{p}")
    chosen = ps_config_from_environ({TF_CONFIG_ENV: json.dumps(explicit), "SM_HOSTS": hosts})
    assert chosen == explicit
    with pytest.raises(ValueError, match="is not one of the 2 ps task"):
        ps_config_from_environ({TF_CONFIG_ENV: json.dumps(tf_config(["a", "b"], "b"))})
    with pytest.raises(ValueError, match="SM_HOSTS and SM_CURRENT_HOST"):
        ps_config_from_environ({})


def test_parameter_server_on_one_host_exits_at_once(tmp_path):
    environ = clean_environ({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"})
    done = subprocess.run(
        [PYTHON, "-m", "smdist.contract.parameter_server"],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "single host" in done.stderr


# --- two hosts, real TensorFlow ----------------------------------------------------------------


def group_alive(pid: int) -> bool:
    """Whether any process is left in the process group ``pid`` leads."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.integration
@pytest.mark.tf
@needs_tensorflow
def test_two_hosts_train_through_parameter_servers(tmp_path: Path):
    hosts = ["algo-1", "algo-2"]
    free = iter(free_ports(2 * len(hosts)))
    ports = {(host, port): next(free) for host in hosts for port in (MASTER_PORT, PS_PORT)}

    def address(host: str, port: int) -> str:
        return f"127.0.0.1:{ports[(host, port)]}"

    servers, scripts, bases = [], [], []
    try:
        for host in hosts:  # the toolkit's order on each host: the parameter server, the script
            base = tmp_path / host / "opt" / "ml"
            environ = sagemaker_host(base, hosts, host)
            ps_config = tf_config(hosts, host, ps_task=True, address=address)
            servers.append(
                start(
                    [PYTHON, "-m", "smdist.contract.parameter_server"],
                    tmp_path / f"ps-{host}.log",
                    clean_environ({**environ, TF_CONFIG_ENV: json.dumps(ps_config)}),
                )
            )
            script_config = json.dumps(tf_config(hosts, host, address=address))
            scripts.append(
                start(
                    [PYTHON, str(SCRIPT), *ARGS],
                    tmp_path / f"script-{host}.log",
                    clean_environ({**environ, "TF_CONFIG": script_config}),
                )
            )
            bases.append(base)

        codes = wait_all(scripts, TIMEOUT)
        assert codes == [0, 0], describe(scripts + servers)
        # The scripts are done; the parameter servers serve until stopped, as in the toolkit
        # process that holds them, then exit 0 on SIGTERM.
        assert [run.process.poll() for run in servers] == [None, None], describe(servers)
        for run in servers:
            run.process.send_signal(signal.SIGTERM)
        assert [run.wait(30) for run in servers] == [0, 0], describe(servers)
        # Nothing left behind: every process group is empty (no stray children).
        left = [run.process.args for run in scripts + servers if group_alive(run.process.pid)]
        assert left == [], describe(scripts + servers)
    finally:
        for run in scripts + servers:
            run.kill()

    coordinator, worker = (run.output for run in scripts)
    assert "ParameterServerStrategy, 1 worker(s), 2 parameter server(s)" in coordinator
    metrics = metric_lines(coordinator)
    assert len(metrics) >= 3, coordinator
    assert metrics[-1]["step"] == STEPS
    assert metrics[-1]["loss"] < metrics[0]["loss"], metrics
    assert metric_lines(worker) == [], "only the coordinator prints metric lines"
    assert "done: the coordinator" in worker, worker
    for index, run in enumerate(servers):
        assert f"parameter server ps:{index} serving at" in run.output, run.output
        assert "stopping on SIGTERM" in run.output, run.output

    # The coordinator saved the model (SavedModel, numbered version folder) and checkpoints.
    assert (bases[0] / "model" / "1" / "saved_model.pb").is_file()
    assert sorted(p.name for p in (bases[0] / "checkpoints").glob("checkpoint-*")) == [
        "checkpoint-000000032.npz",
        "checkpoint-000000064.npz",
    ]
    assert list((bases[1] / "model").iterdir()) == []
