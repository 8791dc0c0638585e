"""TF_CONFIG built from SageMaker's host list, or taken as the container set it."""

from __future__ import annotations

import json
import os
from types import MappingProxyType

import pytest

from smdist.runtime.environments import ClusterEnvironmentError, TFConfigEnvironment
from smdist.runtime.tf_config import apply_tf_config, build_tf_config, ensure_tf_config


def test_every_host_is_a_worker_and_the_index_is_the_current_hosts_position():
    assert build_tf_config(["algo-1", "algo-2", "algo-3"], "algo-2") == {
        "cluster": {"worker": ["algo-1:8890", "algo-2:8890", "algo-3:8890"]},
        "task": {"type": "worker", "index": 1},
    }


def test_one_port_per_host_lets_emulated_hosts_share_a_machine():
    config = build_tf_config(["127.0.0.1", "127.0.0.2"], "127.0.0.1", port=[8890, 8891])
    assert config["cluster"]["worker"] == ["127.0.0.1:8890", "127.0.0.2:8891"]


@pytest.mark.parametrize(
    ("hosts", "current", "port", "message"),
    [
        (["algo-1"], "algo-2", 8890, "current_host='algo-2' is not one of the hosts"),
        ([], "algo-1", 8890, "hosts is empty"),
        (["algo-1", "algo-2"], "algo-1", [8890], "1 ports for 2 hosts"),
        (["algo-1"], "algo-1", 0, "port 0 is not valid"),
    ],
)
def test_inconsistent_arguments_are_rejected_with_the_reason(hosts, current, port, message):
    with pytest.raises(ValueError, match=message):
        build_tf_config(hosts, current, port)


def test_built_config_reads_back_as_the_same_ranks():
    config = build_tf_config(["algo-1", "algo-2"], "algo-2")
    environment = TFConfigEnvironment(MappingProxyType({"TF_CONFIG": json.dumps(config)}))
    assert (environment.global_rank(), environment.world_size()) == (1, 2)
    assert (environment.main_address, environment.main_port) == ("algo-1", 8890)


def test_existing_tf_config_is_used_as_it_is():
    existing = {
        "cluster": {"chief": ["c:1"], "worker": ["w:2"]},
        "task": {"type": "chief", "index": 0},
        "environment": "cloud",
    }
    environ = MappingProxyType(
        {
            "TF_CONFIG": json.dumps(existing),
            "SM_HOSTS": '["algo-1","algo-2"]',
            "SM_CURRENT_HOST": "algo-2",
        }
    )
    assert ensure_tf_config(environ) == existing


def test_sagemaker_hosts_give_a_built_tf_config():
    environ = MappingProxyType({"SM_HOSTS": '["algo-1","algo-2"]', "SM_CURRENT_HOST": "algo-2"})
    assert ensure_tf_config(environ) == build_tf_config(["algo-1", "algo-2"], "algo-2")


def test_ports_for_emulated_hosts_come_from_smdist_tf_ports():
    environ = MappingProxyType(
        {
            "SM_HOSTS": '["algo-1","algo-2"]',
            "SM_CURRENT_HOST": "algo-1",
            "SMDIST_TF_PORTS": "9001,9002",
        }
    )
    assert ensure_tf_config(environ)["cluster"]["worker"] == ["algo-1:9001", "algo-2:9002"]


@pytest.mark.parametrize(
    ("ports", "message"),
    [("90x1", "SMDIST_TF_PORTS='90x1' is not valid"), ("9001,9002,9003", "3 ports for 2 hosts")],
)
def test_bad_smdist_tf_ports_are_reported(ports, message):
    environ = {"SM_HOSTS": '["algo-1","algo-2"]', "SM_CURRENT_HOST": "algo-1"}
    environ["SMDIST_TF_PORTS"] = ports
    with pytest.raises(ClusterEnvironmentError, match=message):
        ensure_tf_config(MappingProxyType(environ))


def test_malformed_existing_tf_config_names_the_variable():
    with pytest.raises(ClusterEnvironmentError, match="TF_CONFIG='not json' is not valid"):
        ensure_tf_config(MappingProxyType({"TF_CONFIG": "not json"}))


def test_outside_any_cluster_no_tf_config_is_needed():
    assert ensure_tf_config(MappingProxyType({"HOME": "/root"})) == {}


def test_apply_writes_only_the_given_mapping():
    target: dict[str, str] = {}
    config = build_tf_config(["algo-1"], "algo-1")
    apply_tf_config(config, target)
    assert json.loads(target["TF_CONFIG"]) == config


def test_apply_leaves_an_equal_existing_string_byte_for_byte():
    original = '{"task": {"index": 0, "type": "worker"}, "cluster": {"worker": ["a:1"]}}'
    target = {"TF_CONFIG": original}
    apply_tf_config(json.loads(original), target)
    assert target["TF_CONFIG"] == original


def test_apply_of_nothing_writes_nothing():
    target: dict[str, str] = {}
    apply_tf_config({}, target)
    assert target == {}


def test_apply_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "placeholder")  # so the test's write is undone afterwards
    config = build_tf_config(["algo-1"], "algo-1")
    apply_tf_config(config)
    assert json.loads(os.environ["TF_CONFIG"]) == config
