"""What ``smdist plan --hosts`` shows, the local backend sets and smdist's v3 driver gives a rank
come from the one builder (``contract.host.host_environment``): each caller only adds what is
its own, and changes none of the builder's values.

For every example job and host, each caller's environment is compared with the builder's for
the same launch, config files and site (the container's, or the emulated host's folder,
loopback and ports); the names a caller may add are listed here, one reason each.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from smdist.backends.local.hosts.folders import EmulatedHost, host_config
from smdist.backends.local.preparation.layout import plan_layout
from smdist.backends.local.processes.commands import local_launch
from smdist.backends.local.processes.environment import JobSettings
from smdist.backends.local.processes.environment import host_environment as local_environment
from smdist.checks.reading import load
from smdist.contract.commands import HostPorts, script_environment
from smdist.contract.environment import HostConfig, Machine, input_data_config, resource_config
from smdist.contract.host import HostSite, host_environment
from smdist.planning.host_view import host_views
from smdist.planning.plan import plan
from smdist.runtime import v3_driver

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
IDS = [path.stem for path in EXAMPLES]
# What the local backend adds: the emulation's paths, region and token, the DLC image's Python
# settings, the host's share of the GPUs and cores, host-name resolution.
# (The region, unbuffered output and no bytecode are the container's: the contract sets them.)
LOCAL_ADDS = {"PYTHONPATH", "SAGEMAKER_BASE_DIR", "SMDIST_LOCAL_JOB_ID", "CUDA_VISIBLE_DEVICES",
              "OMP_NUM_THREADS"}  # fmt: skip
# What smdist's v3 driver changes: the code channel sm_train.sh unpacked is the module dir.
V3_ADDS = {"SM_MODULE_DIR", "PYTHONPATH"}


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_plan_hosts_shows_the_builders_environment(example):
    job = plan(load(example))
    launch = job.launch
    info = job.spec.cluster.info
    machine = Machine(num_cpus=info.vcpus if info else 0, num_gpus=job.gpus_per_host)
    channels = input_data_config({n: s.distribution for n, s in job.spec.inputs.items()})
    for view in host_views(job):
        config = HostConfig(
            dict(job.wire_hyperparameters),
            resource_config(list(launch.hosts), view.name, launch.instance_type, "eth0"),
            channels,
        )
        built = host_environment(launch, view.index, config, machine, job_name=job.job_name,
                                 framework=job.framework, region="<region>")  # fmt: skip
        built.update(script_environment(launch.launcher, list(launch.hosts), view.index))
        assert {**view.sm_environment, **view.container_environment} == built


@pytest.mark.parametrize("own_network", [True, False], ids=["namespaces", "shared"])
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_the_local_backend_adds_to_the_builders_environment_and_changes_none(
    example, own_network, tmp_path
):
    """In namespaces a host is SageMaker's (/opt/ml, eth0, the fixed ports); sharing this
    machine, its folder, loopback and ports of its own."""
    job = plan(load(example))
    hosts = job.spec.cluster.instance_count
    layout = plan_layout(job, job_name="job-1", region="us-west-2", hosts=hosts, cpus=64, gpus=[])
    names = [f"algo-{index + 1}" for index in range(hosts)]
    ports = HostPorts([30001 + i for i in range(hosts)], [31001 + i for i in range(hosts)])
    common = {"job_name": "job-1", "region": "us-west-2", "token": "t", "names_environment": {},
              "base_environment": {"HOME": "/root"}, "cpus": 64}  # fmt: skip
    if own_network:
        settings = JobSettings(**common, master_port=7777, interface="eth0", tools=tmp_path)
        site = HostSite()
    else:
        settings = JobSettings(**common, master_port=30000, ports=ports)
        site = HostSite(interface="lo", master_port=30000, ports=ports)
    launch = local_launch(layout, names, settings.interface)
    adds = LOCAL_ADDS | ({"PATH"} if own_network else set())
    for index, name in enumerate(names):
        inside = Path("/opt/ml") if own_network else None
        host = EmulatedHost(name, index, "127.0.0.1", tmp_path / name, inside=inside).seen
        config = host_config(job, layout, host, names, {}, settings.interface)
        local = local_environment(job, launch, layout, host, config, settings)
        built = host_environment(
            launch, index, config, Machine(num_cpus=64, num_gpus=0), job_name="job-1",
            framework=job.framework, site=replace(site, base=host.base),
            job_environment={**settings.base_environment, **layout.environment},
            region="us-west-2",
        )  # fmt: skip
        assert {k: v for k, v in local.items() if k not in adds} == {
            k: v for k, v in built.items() if k not in adds
        }, name
        assert set(local) - set(built) <= adds
        if own_network:
            assert local["SM_MODEL_DIR"] == "/opt/ml/model"
            assert local["PATH"].startswith(f"{tmp_path}:")  # the hosts' ssh first


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_the_v3_driver_adds_to_the_builders_environment_and_changes_none(
    example, tmp_path, monkeypatch
):
    job = plan(load(example))
    launch = job.launch
    settings = {"launch": launch.to_dict()}
    monkeypatch.chdir(tmp_path)
    for index, name in enumerate(launch.hosts):
        config = HostConfig(
            dict(job.wire_hyperparameters),
            resource_config(list(launch.hosts), name, launch.instance_type, "eth0"),
            input_data_config({}),
        )
        container = {"TRAINING_JOB_NAME": "job-1", "SM_NUM_GPUS": "0", "PATH": "/usr/bin"}
        driver_launch = v3_driver.job_launch(settings, config)
        given = v3_driver.toolkit_environment(
            Path("/opt/ml"), config, container, job.framework, driver_launch
        )
        machine = Machine(num_cpus=given and int(json.loads(given["SM_NUM_CPUS"])), num_gpus=0)
        built = host_environment(driver_launch, index, config, machine, job_name="job-1",
                                 framework=job.framework, job_environment=container)  # fmt: skip
        assert {k: v for k, v in given.items() if k not in V3_ADDS} == {
            k: v for k, v in built.items() if k not in V3_ADDS
        }, name
        assert set(given) - set(built) <= V3_ADDS
