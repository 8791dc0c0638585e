"""Cluster-environment detection: recorded variable sets in, ranks and addresses out."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from types import MappingProxyType

import pytest

from smdist.runtime.environments import (
    ENVIRONMENTS,
    ClusterEnvironmentError,
    LocalEnvironment,
    MPIEnvironment,
    OpenPAIEnvironment,
    SageMakerEnvironment,
    SlurmEnvironment,
    TFConfigEnvironment,
    TorchElasticEnvironment,
    detect,
    torch_env,
)
from smdist.runtime.environments.slurm import expand_nodelist

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "environments"
RECORDED = sorted(path.stem for path in FIXTURES.glob("*.json"))


def frozen(environ: dict[str, str]) -> MappingProxyType:
    """A read-only view: any attempt to write a variable raises TypeError."""
    return MappingProxyType(dict(environ))


def with_resource_config(record: dict, tmp_path: Path) -> dict[str, str]:
    environ = dict(record["environ"])
    if "resource_config" in record:
        config_dir = tmp_path / "input" / "config"
        config_dir.mkdir(parents=True)
        (config_dir / "resourceconfig.json").write_text(json.dumps(record["resource_config"]))
        environ["SAGEMAKER_BASE_DIR"] = str(tmp_path)
    return environ


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_environment_is_detected_and_read_as_recorded(name, recorded, tmp_path):
    record = recorded(name)
    environment = detect(frozen(with_resource_config(record, tmp_path)))
    assert environment.describe() == record["expected"]


def test_detection_order_puts_process_launchers_first_and_local_last():
    assert [cls.name for cls in ENVIRONMENTS] == [
        "torchelastic",
        "mpi",
        "tf_config",
        "slurm",
        "openpai",
        "sagemaker",
        "local",
    ]


def test_detect_reads_os_environ_by_default_and_leaves_it_unchanged(monkeypatch):
    for key in list(os.environ):
        monkeypatch.delenv(key)
    monkeypatch.setenv("SM_HOSTS", '["algo-1","algo-2"]')
    monkeypatch.setenv("SM_CURRENT_HOST", "algo-2")
    monkeypatch.setenv("SM_NUM_GPUS", "0")
    before = dict(os.environ)
    environment = detect()
    assert isinstance(environment, SageMakerEnvironment)
    assert environment.global_rank() == 1
    torch_env(environment)
    assert dict(os.environ) == before


# --- precedence -------------------------------------------------------------------------------


def test_torchrun_worker_inside_sagemaker_is_a_torchelastic_worker(recorded):
    environ = recorded("torchrun_inside_sagemaker")["environ"]
    assert SageMakerEnvironment.detect(environ)  # SageMaker's variables are there too
    environment = detect(frozen(environ))
    assert isinstance(environment, TorchElasticEnvironment)
    assert environment.global_rank() == 11  # torchrun's rank, not the host index (1)


def test_mpirun_rank_inside_sagemaker_is_an_mpi_rank(recorded):
    environ = recorded("mpirun_inside_sagemaker")["environ"]
    assert SageMakerEnvironment.detect(environ)
    environment = detect(frozen(environ))
    assert isinstance(environment, MPIEnvironment)
    assert (environment.global_rank(), environment.node_rank()) == (9, 1)


def test_tf_config_inside_sagemaker_wins_over_the_host_list(recorded):
    environ = dict(recorded("sagemaker_gpu_two_hosts")["environ"])
    environ["TF_CONFIG"] = json.dumps(
        {
            "cluster": {"worker": ["algo-1:8890", "algo-2:8891"]},
            "task": {"type": "worker", "index": 1},
        }
    )
    environment = detect(frozen(environ))
    assert isinstance(environment, TFConfigEnvironment)
    assert environment.main_port == 8890


def test_no_launcher_variables_means_a_local_world_of_one():
    environment = detect(frozen({"HOME": "/home/user"}))
    assert isinstance(environment, LocalEnvironment)
    assert (environment.world_size(), environment.global_rank()) == (1, 0)


# --- torch_env --------------------------------------------------------------------------------


def test_torch_env_gives_the_variables_init_process_group_reads(recorded):
    environment = detect(frozen(recorded("sagemaker_gpu_two_hosts")["environ"]))
    assert torch_env(environment) == {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "algo-1",
        "MASTER_PORT": "7777",
    }


# --- SageMaker --------------------------------------------------------------------------------


def sagemaker(**variables: str) -> SageMakerEnvironment:
    return SageMakerEnvironment(frozen(variables))


def test_sagemaker_hosts_that_are_not_json_name_the_variable_and_the_fix():
    with pytest.raises(ClusterEnvironmentError) as error:
        detect(frozen({"SM_HOSTS": "algo-1,algo-2", "SM_CURRENT_HOST": "algo-1"}))
    message = str(error.value)
    assert "SM_HOSTS='algo-1,algo-2'" in message
    assert "JSON list" in message


@pytest.mark.parametrize("raw", ['"algo-1"', "[]", '["algo-1", "algo-1"]', '["algo-1", 3]'])
def test_sagemaker_hosts_must_be_a_list_of_distinct_names(raw):
    with pytest.raises(ClusterEnvironmentError, match="SM_HOSTS="):
        sagemaker(SM_HOSTS=raw, SM_CURRENT_HOST="algo-1").validate_settings()


def test_sagemaker_current_host_outside_the_hosts_names_both():
    with pytest.raises(ClusterEnvironmentError) as error:
        detect(frozen({"SM_HOSTS": '["algo-1","algo-2"]', "SM_CURRENT_HOST": "algo-3"}))
    message = str(error.value)
    assert "SM_CURRENT_HOST='algo-3'" in message
    assert "['algo-1', 'algo-2']" in message


def test_sagemaker_gpu_count_that_is_not_a_number_is_rejected():
    environment = sagemaker(SM_HOSTS='["algo-1"]', SM_CURRENT_HOST="algo-1", SM_NUM_GPUS="eight")
    with pytest.raises(ClusterEnvironmentError, match="SM_NUM_GPUS='eight'.*integer >= 0"):
        environment.validate_settings()


def test_sagemaker_rank_is_the_position_of_the_current_host():
    environment = sagemaker(SM_HOSTS='["algo-1","algo-2","algo-3"]', SM_CURRENT_HOST="algo-3")
    assert (environment.global_rank(), environment.node_rank(), environment.world_size()) == (
        2,
        2,
        3,
    )
    assert environment.local_rank() == 0


def test_sagemaker_variables_win_over_the_resource_config(tmp_path):
    config_dir = tmp_path / "input" / "config"
    config_dir.mkdir(parents=True)
    (config_dir / "resourceconfig.json").write_text(
        json.dumps({"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]})
    )
    environment = sagemaker(
        SAGEMAKER_BASE_DIR=str(tmp_path), SM_HOSTS='["algo-1","algo-2"]', SM_CURRENT_HOST="algo-2"
    )
    assert environment.global_rank() == 1


def test_sagemaker_resource_config_file_alone_is_detected(tmp_path):
    environ = {"SAGEMAKER_BASE_DIR": str(tmp_path)}
    assert not SageMakerEnvironment.detect(environ)
    config_dir = tmp_path / "input" / "config"
    config_dir.mkdir(parents=True)
    (config_dir / "resourceconfig.json").write_text(
        json.dumps({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]})
    )
    assert SageMakerEnvironment.detect(environ)
    assert detect(frozen(environ)).global_rank() == 1


def test_sagemaker_malformed_resource_config_names_its_source(tmp_path):
    environment = sagemaker(SM_RESOURCE_CONFIG="{not json", SM_NUM_GPUS="0")
    with pytest.raises(ClusterEnvironmentError, match="SM_RESOURCE_CONFIG='{not json'"):
        environment.validate_settings()


def test_sagemaker_facts_for_the_launcher_come_from_variables_or_resource_config(recorded):
    environment = SageMakerEnvironment(frozen(recorded("sagemaker_gpu_two_hosts")["environ"]))
    assert environment.job_name == "smdist-ddp-2026-11-20-10-00-00-123"
    assert environment.instance_type == "ml.p4d.24xlarge"
    assert environment.network_interface_name == "eth0"
    assert environment.announced_gpus() == 8
    bare = sagemaker(
        SM_RESOURCE_CONFIG=json.dumps(
            {"current_host": "algo-1", "hosts": ["algo-1"], "network_interface_name": "ens5"}
        ),
        SM_TRAINING_ENV=json.dumps({"job_name": "from-training-env"}),
    )
    assert bare.network_interface_name == "ens5"
    assert bare.job_name == "from-training-env"
    assert bare.announced_gpus() is None


def test_default_port_is_logged_once_not_written(caplog):
    environ = {"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"}
    environment = SageMakerEnvironment(frozen(environ))
    with caplog.at_level(logging.INFO, logger="smdist.runtime.environments"):
        assert environment.main_port == 7777
        assert environment.main_port == 7777
    records = [r for r in caplog.records if "MASTER_PORT" in r.getMessage()]
    assert len(records) == 1
    assert "7777" in records[0].getMessage()
    assert "MASTER_PORT" not in environ


# --- torchelastic -----------------------------------------------------------------------------


def test_torchelastic_needs_its_local_and_group_ranks_to_be_detected():
    assert not TorchElasticEnvironment.detect({"RANK": "0", "WORLD_SIZE": "2"})


def test_torchelastic_rank_that_is_not_a_number_names_the_variable(recorded):
    environ = dict(recorded("torchrun_single_node")["environ"], RANK="one")
    with pytest.raises(ClusterEnvironmentError, match="RANK='one' is not valid"):
        detect(frozen(environ))


def test_torchelastic_local_rank_beyond_local_world_size_is_rejected(recorded):
    environ = dict(recorded("torchrun_single_node")["environ"], LOCAL_RANK="2")
    with pytest.raises(ClusterEnvironmentError, match="LOCAL_RANK=2 is not valid"):
        detect(frozen(environ))


def test_torchelastic_reports_restarts(recorded):
    environment = TorchElasticEnvironment(frozen(recorded("torchrun_inside_sagemaker")["environ"]))
    assert environment.restart_count() == 1
    assert environment.run_id == "smdist-ddp-2026-11-20-10-00-00-123"


def test_rank_outside_the_world_is_rejected(recorded):
    environ = dict(recorded("torchrun_single_node")["environ"], RANK="2")
    with pytest.raises(ClusterEnvironmentError, match="global rank 2 is outside the world of 2"):
        detect(frozen(environ))


# --- MPI / Horovod ----------------------------------------------------------------------------


def test_mpi_ignores_open_mpi_node_rank_which_is_not_the_node_index(recorded):
    environ = recorded("mpirun_single_node")["environ"]
    assert environ["OMPI_COMM_WORLD_NODE_RANK"] == "1"
    assert MPIEnvironment(frozen(environ)).node_rank() == 0


def test_mpi_main_address_prefers_master_addr_then_first_sagemaker_host():
    ranks = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}
    ranks |= {"OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}
    assert MPIEnvironment(frozen(ranks)).main_address == "127.0.0.1"
    with_hosts = ranks | {"SM_HOSTS": '["algo-7","algo-8"]'}
    assert MPIEnvironment(frozen(with_hosts)).main_address == "algo-7"
    explicit = with_hosts | {"MASTER_ADDR": "10.0.0.9"}
    assert MPIEnvironment(frozen(explicit)).main_address == "10.0.0.9"


def test_mpi_variables_win_over_horovod_ones_when_both_are_set():
    environ = {
        "OMPI_COMM_WORLD_RANK": "1",
        "OMPI_COMM_WORLD_SIZE": "2",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
        "HOROVOD_RANK": "0",
        "HOROVOD_SIZE": "2",
    }
    assert MPIEnvironment(frozen(environ)).global_rank() == 1


def test_mpi_without_local_size_says_which_variables_it_needs():
    environment = MPIEnvironment(frozen({"HOROVOD_RANK": "0", "HOROVOD_SIZE": "2"}))
    with pytest.raises(
        ClusterEnvironmentError,
        match="Neither OMPI_COMM_WORLD_LOCAL_(RANK|SIZE) nor HOROVOD_LOCAL_",
    ):
        environment.validate_settings()


# --- TF_CONFIG --------------------------------------------------------------------------------


def test_tf_config_that_is_not_json_names_the_variable():
    with pytest.raises(ClusterEnvironmentError, match="TF_CONFIG='{cluster' is not valid"):
        detect(frozen({"TF_CONFIG": "{cluster"}))


def test_tf_config_parameter_server_has_no_rank_in_the_collective():
    config = {"cluster": {"worker": ["a:1"], "ps": ["b:2"]}, "task": {"type": "ps", "index": 0}}
    environment = TFConfigEnvironment(frozen({"TF_CONFIG": json.dumps(config)}))
    with pytest.raises(ClusterEnvironmentError, match="task.type='ps' takes no part"):
        environment.global_rank()


def test_tf_config_task_index_beyond_the_workers_is_rejected():
    config = {"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}}
    with pytest.raises(ClusterEnvironmentError, match="task.index=2 is not valid"):
        detect(frozen({"TF_CONFIG": json.dumps(config)}))


def test_tf_config_address_without_port_is_rejected():
    config = {"cluster": {"worker": ["algo-1"]}, "task": {"type": "worker", "index": 0}}
    with pytest.raises(
        ClusterEnvironmentError, match="'algo-1' is not valid: expected 'host:port'"
    ):
        detect(frozen({"TF_CONFIG": json.dumps(config)}))


# --- Slurm ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("node1", ["node1"]),
        ("node[1-3]", ["node1", "node2", "node3"]),
        ("gpu-[007-009,011]", ["gpu-007", "gpu-008", "gpu-009", "gpu-011"]),
        ("a[1-2],b,c[5]", ["a1", "a2", "b", "c5"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
    ],
)
def test_slurm_nodelist_expansion(nodelist, hosts):
    assert expand_nodelist(nodelist) == hosts


@pytest.mark.parametrize("nodelist", ["node[1-", "node[3-1]", "node[a-b]", "node1,,node2"])
def test_slurm_malformed_nodelist_names_the_variable(nodelist):
    with pytest.raises(ClusterEnvironmentError, match="SLURM_JOB_NODELIST="):
        expand_nodelist(nodelist)


def test_slurm_nodelist_and_node_count_must_agree(recorded):
    environ = dict(recorded("slurm_srun")["environ"], SLURM_JOB_NODELIST="gpu-[07-08]")
    with pytest.raises(ClusterEnvironmentError, match="lists 2 hosts.*3 nodes"):
        SlurmEnvironment(frozen(environ)).validate_settings()


def test_slurm_master_variables_override_the_derived_ones(recorded):
    environ = dict(recorded("slurm_srun")["environ"], MASTER_ADDR="login1", MASTER_PORT="1234")
    environment = SlurmEnvironment(frozen(environ))
    assert (environment.main_address, environment.main_port) == ("login1", 1234)


# --- OpenPAI ----------------------------------------------------------------------------------


def test_openpai_missing_task_address_names_the_variable(recorded):
    environ = dict(recorded("openpai_task_index")["environ"])
    del environ["PAI_HOST_IP_worker_1"]
    with pytest.raises(ClusterEnvironmentError, match="PAI_HOST_IP_worker_1 is not set"):
        detect(frozen(environ))


def test_openpai_port_label_can_be_chosen(recorded):
    environ = dict(recorded("openpai_task_index")["environ"])
    environ |= {"PAI_worker_0_nccl_PORT": "25000", "SMDIST_PAI_PORT_LABEL": "nccl"}
    assert OpenPAIEnvironment(frozen(environ)).main_port == 25000


def test_openpai_malformed_resource_names_the_variable(recorded):
    environ = dict(recorded("openpai_task_index")["environ"], PAI_RESOURCE_worker="four,16")
    with pytest.raises(ClusterEnvironmentError, match="PAI_RESOURCE_worker='four,16'"):
        detect(frozen(environ))


# --- Local ------------------------------------------------------------------------------------


def test_local_honours_master_port():
    environment = LocalEnvironment(frozen({"MASTER_PORT": "31337"}))
    assert environment.main_port == 31337


@pytest.mark.parametrize("port", ["0", "70000", "http"])
def test_port_outside_the_tcp_range_is_rejected(port):
    with pytest.raises(ClusterEnvironmentError, match=f"MASTER_PORT='{port}'.*1 and 65535"):
        detect(frozen({"MASTER_PORT": port}))
