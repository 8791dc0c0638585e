"""The parameter_server distribution by hand: smdist.contract.parameter_server as SageMaker's
TensorFlow toolkit starts it, without a backend, and the toolkit's TF_CONFIG (``tf_config``).

A host's parameter server runs on 127.0.0.1 as the toolkit runs one (``python -m
smdist.contract.parameter_server``). The toolkit's ports (2222 for master/worker, 2223 for ps)
become free ports here, through ``tf_config``'s address function: TensorFlow servers bind
0.0.0.0:<port>, so hosts sharing a machine need distinct ports. Hosts that train through their
parameter servers (each its server, then tensorflow_parameter_server.py with its TF_CONFIG) run
in test_parameter_server_local's job, whose hosts start these same processes. The unit tests of
``tf_config`` need no TensorFlow.
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
    PYTHON,
    clean_environ,
    describe,
    sagemaker_host,
    start,
    wait_for,
)

from smdist.backends.local.hosts.shared.ports import free_ports
from smdist.contract.parameter_server import (
    MASTER_PORT,
    PS_PORT,
    TF_CONFIG_ENV,
    ps_config_from_environ,
    tf_config,
)

TIMEOUT = 120

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


# --- a parameter server by hand, real TensorFlow ----------------------------------------------


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
def test_a_parameter_server_serves_until_sigterm_then_exits_0(tmp_path: Path):
    """One host's parameter server of a two-host job, started as the toolkit starts it.

    The two hosts' scripts training through their parameter servers, each server serving
    until it is stopped with SIGTERM after its host's script, run in the local backend's
    job of test_parameter_server_local (the same two processes per host, through
    ``parameter_server_host``): here the server alone shows its own exit code and that it
    leaves nothing behind.
    """
    hosts = ["algo-1", "algo-2"]
    free = iter(free_ports(2 * len(hosts)))
    ports = {(host, port): next(free) for host in hosts for port in (MASTER_PORT, PS_PORT)}

    def address(host: str, port: int) -> str:
        return f"127.0.0.1:{ports[(host, port)]}"

    environ = sagemaker_host(tmp_path / "algo-2" / "opt" / "ml", hosts, "algo-2")
    ps_config = tf_config(hosts, "algo-2", ps_task=True, address=address)
    server = start(
        [PYTHON, "-m", "smdist.contract.parameter_server"],
        tmp_path / "ps-algo-2.log",
        clean_environ({**environ, TF_CONFIG_ENV: json.dumps(ps_config)}),
    )
    try:
        serving = f"parameter server ps:1 serving at {address('algo-2', PS_PORT)}"
        wait_for(lambda: serving in server.output, TIMEOUT, "the server", [server])
        # It serves on (nothing connects, no coordinator comes) until it is stopped.
        assert server.process.poll() is None, describe([server])
        server.process.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0, describe([server])
        assert "stopping on SIGTERM" in server.output, server.output
        # Nothing left behind: its process group is empty (no stray children).
        assert not group_alive(server.process.pid), describe([server])
    finally:
        server.kill()
