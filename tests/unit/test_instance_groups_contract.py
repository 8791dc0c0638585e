"""Heterogeneous clusters in the container contract: each host's resourceconfig.json, the
toolkit's group variables, which hosts start the runner and which run the program once, and
the runtime's view of the distribution's hosts.

The job is AWS's shape (``conformance_cases.heterogeneous_job``): a CPU ``data`` group of one
ml.c5.2xlarge feeding a ``gpu`` group of two ml.g5.xlarge that runs DDP.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from smdist.contract.commands import HostArguments, Image, host_command
from smdist.contract.environment import HostConfig, Machine, input_data_config
from smdist.contract.groups import (
    DISTRIBUTION_GROUPS,
    HostGroup,
    channels_for_group,
    group_resource_config,
    name_hosts,
    rank_hosts,
    toolkit_instance_groups,
)
from smdist.contract.host import host_environment, host_resource_config
from smdist.contract.launch import Launch, Launcher
from smdist.planning.plan import plan
from smdist.runtime import launcher as runtime_launcher
from smdist.runtime.environments import ClusterEnvironmentError, SageMakerEnvironment
from smdist.spec.job import JobSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conformance_cases import heterogeneous_job  # noqa: E402

GROUPS = name_hosts([("data", "ml.c5.2xlarge", 1, 0), ("gpu", "ml.g5.xlarge", 2, 1)])
IMAGE = Image(python="py", hostname_shim=None)


def hetero_plan(**strategy):
    spec = heterogeneous_job("t", "my-bucket")
    if strategy:
        data = spec.model_dump(mode="json", exclude_unset=True)
        data["strategy"] = {**data["strategy"], **strategy}
        spec = JobSpec.from_dict(data)
    return plan(spec)


def environment_of(launch: Launch, index: int, wire: dict[str, str]) -> dict[str, str]:
    host = launch.all_hosts[index]
    config = HostConfig(wire, host_resource_config(launch, host, "eth0"), input_data_config({}))
    return host_environment(
        launch, index, config, Machine(num_cpus=4, num_gpus=0), job_name="j", framework="pytorch"
    )


# ---- naming and resourceconfig.json ---------------------------------------------------------
def test_hosts_are_numbered_across_the_groups_in_order():
    assert [group.hosts for group in GROUPS] == [("algo-1",), ("algo-2", "algo-3")]


def test_each_host_names_its_group_and_its_groups_type():
    data = group_resource_config(GROUPS, "algo-1", "eth0")
    gpu = group_resource_config(GROUPS, "algo-3", "eth0")
    assert (data["current_group_name"], data["current_instance_type"]) == ("data", "ml.c5.2xlarge")
    assert (gpu["current_group_name"], gpu["current_instance_type"]) == ("gpu", "ml.g5.xlarge")
    assert data["hosts"] == gpu["hosts"] == ["algo-1", "algo-2", "algo-3"]
    assert data["instance_groups"] == [
        {"instance_group_name": "data", "instance_type": "ml.c5.2xlarge", "hosts": ["algo-1"]},
        {"instance_group_name": "gpu", "instance_type": "ml.g5.xlarge",
         "hosts": ["algo-2", "algo-3"]},
    ]  # fmt: skip
    with pytest.raises(ValueError, match="algo-9"):
        group_resource_config(GROUPS, "algo-9", "eth0")


# ---- the toolkit's derivation ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "host", "distribution_hosts", "master"),
    [
        ({DISTRIBUTION_GROUPS: ["gpu"]}, "algo-1", ["algo-2", "algo-3"], "algo-2"),
        ({DISTRIBUTION_GROUPS: ["gpu"]}, "algo-3", ["algo-2", "algo-3"], "algo-2"),
        # No groups named: a distribution flag makes each host's own group the distribution.
        ({"sagemaker_torch_distributed_enabled": True}, "algo-1", ["algo-1"], "algo-1"),
        ({}, "algo-3", [], "algo-1"),  # no distribution: the master is the first host
    ],
)
def test_the_toolkits_distribution_hosts_and_master(params, host, distribution_hosts, master):
    derived = toolkit_instance_groups(group_resource_config(GROUPS, host, "eth0"), params)
    assert derived["distribution_hosts"] == distribution_hosts
    assert derived["master_hostname"] == master
    assert derived["is_hetero"] is True
    assert derived["instance_groups"] == ["data", "gpu"]


def test_rank_hosts_follow_the_config_not_the_numbering():
    # AWS's example job: SageMaker gave the second group algo-1.
    resources = {
        "hosts": ["algo-1", "algo-2"],
        "instance_groups": [
            {"instance_group_name": "data_group", "instance_type": "ml.c5.xlarge",
             "hosts": ["algo-2"]},
            {"instance_group_name": "dnn_group", "instance_type": "ml.p3.2xlarge",
             "hosts": ["algo-1"]},
        ],
    }  # fmt: skip
    assert rank_hosts(resources, ["dnn_group"]) == ["algo-1"]
    assert rank_hosts(resources, []) == ["algo-1", "algo-2"]


def test_channels_reach_the_hosts_of_their_groups():
    routed = {"raw": ["data"], "train": ["gpu"], "code": []}
    assert channels_for_group(routed, "data") == ["raw", "code"]
    assert channels_for_group(routed, "gpu") == ["train", "code"]
    assert channels_for_group(routed, None) == ["code"]


# ---- the plan's launch ----------------------------------------------------------------------
def test_the_strategy_renders_the_groups_into_the_launch():
    launch = hetero_plan().launch
    assert launch.hosts == ("algo-2", "algo-3")  # the world: the gpu group's hosts
    assert launch.all_hosts == ("algo-1", "algo-2", "algo-3")
    assert launch.distribution_groups == ("gpu",)
    assert [g.gpus_per_host for g in launch.instance_groups] == [0, 1]
    assert launch.toolkit_hyperparameters[DISTRIBUTION_GROUPS] == ["gpu"]
    assert launch.world_size == 2
    assert Launch.from_dict(json.loads(launch.to_json())) == launch
    with pytest.raises(ValueError, match="instance groups"):
        launch.resized(["algo-1", "algo-2"], 1)


def test_the_wire_hyperparameters_name_the_distribution_groups():
    assert json.loads(hetero_plan().wire_hyperparameters[DISTRIBUTION_GROUPS]) == ["gpu"]


def test_a_launch_takes_the_containers_hosts_and_renames():
    launch = hetero_plan().launch
    swapped = {
        "hosts": ["algo-1", "algo-2", "algo-3"],
        "instance_groups": [
            {"instance_group_name": "gpu", "instance_type": "ml.g5.xlarge",
             "hosts": ["algo-1", "algo-3"]},
            {"instance_group_name": "data", "instance_type": "ml.c5.2xlarge",
             "hosts": ["algo-2"]},
        ],
    }  # fmt: skip
    on_cluster = launch.on_cluster(swapped)
    assert on_cluster.hosts == ("algo-1", "algo-3")
    assert on_cluster.group_of("algo-2").name == "data"  # type: ignore[union-attr]
    named = launch.renamed({"algo-1": "10.0.0.1", "algo-2": "10.0.0.2", "algo-3": "10.0.0.3"})
    assert named.hosts == ("10.0.0.2", "10.0.0.3")
    assert named.instance_groups[0].hosts == ("10.0.0.1",)


# ---- each host's command and environment ---------------------------------------------------
@pytest.mark.parametrize("launcher", ["torchrun", "torch_distributed"])
def test_only_the_distribution_hosts_start_the_runner(launcher):
    job = hetero_plan(launcher=launcher)
    launch = job.launch
    arguments = HostArguments(["--epochs", "1"])
    commands = [host_command(launch, index, IMAGE, job.program, arguments) for index in range(3)]
    assert commands[0].argv == ["py", "--", job.program, "--epochs", "1"]
    assert "runs the program once: instance group data" in commands[0].role
    if launch.launcher is Launcher.TORCHRUN:
        for rank, command in enumerate(commands[1:]):
            argv = command.argv or []
            assert argv[:5] == ["torchrun", "--nnodes", "2", "--nproc_per_node", "1"]
            assert argv[argv.index("--master_addr") + 1] == "algo-2"
            assert argv[argv.index("--node_rank") + 1] == str(rank)
    else:  # smdist's launcher runs everywhere, and starts torchrun on the gpu hosts itself
        assert [c.argv for c in commands[1:]] == [commands[0].argv] * 2


def test_mpirun_spans_the_distribution_hosts_only():
    spec = heterogeneous_job("t", "my-bucket").model_dump(mode="json", exclude_unset=True)
    spec["strategy"] = {"kind": "sddp", "instance_groups": ["gpu"]}
    spec["cluster"]["instance_groups"][1]["instance_type"] = "ml.p4d.24xlarge"
    spec["code"] = {"framework_version": "2.2.0", "py_version": "py310"}
    job = plan(JobSpec.from_dict(spec))
    launch, arguments = job.launch, HostArguments(["--a", "1"], ["--a", "1"])
    first, second, data = (host_command(launch, i, IMAGE, job.program, arguments)
                           for i in (1, 2, 0))  # fmt: skip
    argv = first.argv or []
    assert argv[0] == "mpirun" and argv[argv.index("--host") + 1] == "algo-2:8,algo-3:8"
    assert second.argv is None  # waits for algo-2's mpirun
    assert data.argv == ["py", "--", job.program, "--a", "1"]


def test_every_host_gets_its_groups_variables_and_the_first_distribution_host_as_master():
    job = hetero_plan(launcher="torch_distributed")
    launch, wire = job.launch, dict(job.wire_hyperparameters)
    data, first, second = (environment_of(launch, index, wire) for index in range(3))
    assert {env["MASTER_ADDR"] for env in (data, first, second)} == {"algo-2"}
    assert data["SM_CURRENT_INSTANCE_GROUP"] == "data"
    assert data["SM_CURRENT_INSTANCE_TYPE"] == "ml.c5.2xlarge"
    assert data["SM_CURRENT_INSTANCE_GROUP_HOSTS"] == '["algo-1"]'
    assert second["SM_CURRENT_INSTANCE_GROUP_HOSTS"] == '["algo-2","algo-3"]'
    assert second["SM_CURRENT_INSTANCE_TYPE"] == "ml.g5.xlarge"
    for env in (data, first, second):
        assert env["SM_INSTANCE_GROUPS"] == '["data","gpu"]'
        assert env["SM_DISTRIBUTION_INSTANCE_GROUPS"] == '["gpu"]'
        assert env["SM_IS_HETERO"] == "true"
        assert json.loads(env["SM_TRAINING_ENV"])["distribution_hosts"] == ["algo-2", "algo-3"]
    assert data["CURRENT_HOST"] == "algo-1"


def test_a_homogeneous_job_keeps_one_homogeneous_cluster_group():
    launch = Launch(Launcher.TORCHRUN, ("algo-1", "algo-2"), 1, "ml.g5.xlarge")
    config = host_resource_config(launch, "algo-2", "eth0")
    assert config["current_group_name"] == "homogeneousCluster"
    assert config["instance_groups"][0]["hosts"] == ["algo-1", "algo-2"]
    assert launch.all_hosts == launch.hosts and launch.distribution_groups == ()


# ---- the runtime on a host -------------------------------------------------------------------
def sagemaker_environ(host: str, groups: str | None = '["gpu"]') -> dict[str, str]:
    environ = {
        "SM_HOSTS": '["algo-1","algo-2","algo-3"]',
        "SM_CURRENT_HOST": host,
        "SM_RESOURCE_CONFIG": json.dumps(group_resource_config(GROUPS, host, "eth0")),
    }
    if groups is not None:
        environ["SM_DISTRIBUTION_INSTANCE_GROUPS"] = groups
    return environ


def test_the_runtime_ranks_the_distribution_hosts_only():
    gpu = SageMakerEnvironment(sagemaker_environ("algo-3"))
    assert (gpu.hosts, gpu.world_size(), gpu.node_rank()) == (["algo-2", "algo-3"], 2, 1)
    assert gpu.main_address == "algo-2" and gpu.all_hosts == ["algo-1", "algo-2", "algo-3"]
    data = SageMakerEnvironment(sagemaker_environ("algo-1"))
    assert not data.in_distribution
    with pytest.raises(ClusterEnvironmentError, match="no rank"):
        data.node_rank()
    # Where the environment names no groups, the shipped launch's may.
    told = SageMakerEnvironment(sagemaker_environ("algo-1", None), distribution_groups=["gpu"])
    assert told.hosts == ["algo-2", "algo-3"]
    assert SageMakerEnvironment(sagemaker_environ("algo-1", "[]")).in_distribution


def test_smdists_launcher_runs_the_script_once_outside_the_distribution(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(
        runtime_launcher, "run_forwarding_signals", lambda argv, env: started.append(argv) or 0
    )
    (tmp_path / "train.py").write_text("")
    environ = {**sagemaker_environ("algo-1"), "SMDIST_TRAINING_SCRIPT": "train.py"}
    code = runtime_launcher.main(["--steps", "3"], environ, [tmp_path])
    assert code == 0
    assert started == [[sys.executable, "--", str(tmp_path / "train.py"), "--steps", "3"]]


def test_host_groups_read_back_from_json():
    group = HostGroup.of({"name": "g", "instance_type": "ml.g5.xlarge", "hosts": ["algo-1"]})
    assert group.hosts == ("algo-1",) and group.gpus_per_host == 0
