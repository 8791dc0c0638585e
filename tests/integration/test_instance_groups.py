"""A heterogeneous cluster on the local backend, end to end, and held to SageMaker's own code.

The job is AWS's heterogeneous-clusters shape (``user_scripts/hetero_data_feed``): a CPU
``data`` group of one ml.c5.2xlarge reads its ``raw`` channel and serves batches over TCP to a
``gpu`` group of two ml.g5.xlarge whose ranks, started by torchrun, train one model together
(their gradients averaged over TCP through rank 0 on MASTER_ADDR), each group with a channel of
its own. It runs through ``smdist run`` with both DDP launchers: smdist's (the program on every
host, starting torchrun on the gpu hosts only) in the hosts' own namespaces where this machine
makes them, and the container's torch_distributed (the local backend starts torchrun on the gpu
hosts only) on hosts sharing this machine. The ranks are plain Python: what the job proves is
where smdist starts torchrun and what every host is told; torchrun itself still forms the gpu
group's world (its rendezvous on MASTER_ADDR), and DDP over gloo across hosts under both
launchers is test_local_backend's test_every_strategy_runs_end_to_end.

The real training toolkit (sagemaker-training and the PyTorch container, in the stand-in DLC's
Python) then reads each emulated host's config files, as it does in a SageMaker container, and
must find what the host's processes were given: the same group variables, distribution hosts
and master, and the runner on exactly the hosts where torchrun ran. The container contract's
builder is held to the same toolkit for every host of the job as SageMaker runs it (the whole
SM_* set, MASTER_ADDR and NCCL).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from local_jobs import REPO, assert_nothing_left, checksums, smdist_run
from test_contract_oracle import FRAMEWORK_NAMES, ORACLE
from toolkit_per_host import toolkit_per_host

from smdist.backends.local.hosts.shared.ports import free_ports
from smdist.contract.environment import FRAMEWORK_MODULES, HostConfig, Machine, input_data_config
from smdist.contract.host import HostSite, host_environment, host_resource_config
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

sys.path.insert(0, str(REPO / "tests"))
from conformance_cases import heterogeneous_job  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.torch]

SCRIPT_DIR = REPO / "tests" / "integration" / "user_scripts" / "hetero_data_feed"
DLC_PYTHON = Path(os.environ.get("SMDIST_DLC_VENV") or REPO / ".venv-dlc") / "bin" / "python"
GROUP_VARIABLES = (
    "SM_CURRENT_HOST", "SM_HOSTS", "SM_CURRENT_INSTANCE_TYPE", "SM_CURRENT_INSTANCE_GROUP",
    "SM_CURRENT_INSTANCE_GROUP_HOSTS", "SM_INSTANCE_GROUPS", "SM_INSTANCE_GROUPS_DICT",
    "SM_DISTRIBUTION_INSTANCE_GROUPS", "SM_IS_HETERO", "SM_CHANNELS",
)  # fmt: skip
# What SageMaker's container computes from the host's files (SAGEMAKER_BASE_DIR).
TOOLKIT = """
import json, os
from sagemaker_training import environment
from sagemaker_pytorch_container import training
env = environment.Environment()
training._set_distributed_environment(env)
print(json.dumps({
    "sm": env.to_env_vars(), "distribution_hosts": env.distribution_hosts,
    "master": env.master_hostname, "is_hetero": env.is_hetero,
    "runner": env.current_instance_group in env.distribution_instance_groups,
    "MASTER_ADDR": os.environ["MASTER_ADDR"],
}))
"""
STEPS = 3


def job_file(tmp_path: Path, launcher: str) -> Path:
    raw, train = tmp_path / "raw", tmp_path / "train"
    raw.mkdir()
    train.mkdir()
    (raw / "numbers.txt").write_text(" ".join(str(n) for n in range(1, 41)))
    (train / "labels.txt").write_text("unused by the script: it only proves where it lands\n")
    feed_port, world_port = free_ports(2)
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: hetero-feed
        strategy: {{kind: pytorch_ddp, launcher: {launcher}, instance_groups: [gpu]}}
        cluster:
          instance_groups:
            - {{name: data, instance_type: ml.c5.2xlarge, instance_count: 1}}
            - {{name: gpu, instance_type: ml.g5.xlarge, instance_count: 2}}
        code: {{entry_point: train.py, source_dir: {SCRIPT_DIR}}}
        inputs:
          raw: {{uri: "{raw.as_uri()}", instance_groups: [data]}}
          train: {{uri: "{train.as_uri()}", instance_groups: [gpu]}}
        hyperparameters: {{feed-port: {feed_port}, world-port: {world_port}, steps: {STEPS}}}
        max_run: 240
        """))  # fmt: skip
    return job


@pytest.fixture(
    scope="module",
    params=[("torchrun", ()), ("torch_distributed", ("--no-namespaces",))],
    ids=["smdist-launcher", "torch_distributed-shared-machine"],
)
def finished(request, tmp_path_factory):
    """One run of the job per launcher: (launcher, the run, each host's records)."""
    launcher, options = request.param
    tmp_path = tmp_path_factory.mktemp(launcher)
    run = smdist_run(job_file(tmp_path, launcher), tmp_path, *options, timeout=300)
    assert run.returncode == 0, run.output
    assert_nothing_left(tmp_path)
    records = {}
    for host in sorted((run.job_dir() / "hosts").iterdir()):
        found = sorted((host / "output" / "data").glob("record-*.json"))
        records[host.name] = [json.loads(path.read_text()) for path in found]
    return launcher, run, records


def test_the_data_group_feeds_the_ddp_group(finished):
    launcher, run, records = finished
    hosts = json.loads(next(iter(records.values()))[0]["SM_HOSTS"])
    data_host, gpu_hosts = hosts[0], hosts[1:]  # the groups take the numbers in order
    (data,) = records[data_host]
    assert data["SM_CURRENT_INSTANCE_GROUP"] == "data"
    assert data["SM_CURRENT_INSTANCE_TYPE"] == "ml.c5.2xlarge"
    assert data["RANK"] is None and data["TORCHELASTIC_RUN_ID"] is None  # no torchrun here
    assert data["MASTER_ADDR"] == gpu_hosts[0]
    assert data["served"] == STEPS * len(gpu_hosts) and data["raw_numbers"] == 40
    # The raw channel is the data group's only: nowhere else, in any form.
    assert data["SM_CHANNELS"] == '["raw"]' and data["channel_variables"] == ["SM_CHANNEL_RAW"]
    assert data["channel_folders"] == data["inputdataconfig"] == ["raw"]
    for rank, host in enumerate(gpu_hosts):
        (gpu,) = records[host]
        assert (gpu["SM_CURRENT_INSTANCE_GROUP"], gpu["RANK"]) == ("gpu", str(rank))
        assert gpu["SM_CURRENT_INSTANCE_TYPE"] == "ml.g5.xlarge"
        assert gpu["TORCHELASTIC_RUN_ID"] is not None and gpu["WORLD_SIZE"] == "2"
        assert gpu["MASTER_ADDR"] == gpu_hosts[0]
        assert gpu["channel_folders"] == gpu["inputdataconfig"] == ["train"]
        assert gpu["channel_variables"] == ["SM_CHANNEL_TRAIN"]
        assert json.loads(gpu["SM_CURRENT_INSTANCE_GROUP_HOSTS"]) == gpu_hosts
    found = checksums(run.output)
    assert sorted(found) == [0, 1] and len(set(found.values())) == 1, run.output
    commands = (run.job_dir() / "commands.txt").read_text().splitlines()
    # torchrun's arguments (after the first host, behind torchrun_when_ready.py)
    ran_torchrun = [line.split(":")[0] for line in commands if " --nnodes 2 " in line]
    if launcher == "torch_distributed":  # the container's runner, started by the backend
        assert ran_torchrun == gpu_hosts
    else:  # smdist's launcher on every host decides
        assert ran_torchrun == []
        assert f"host {data_host} is not in the distribution's instance groups" in run.output
        for host in gpu_hosts:
            assert f"smdist-launcher: host {host}: " in run.output


@pytest.mark.skipif(not DLC_PYTHON.is_file(), reason=f"no stand-in DLC python at {DLC_PYTHON}")
def test_the_training_toolkit_reads_the_hosts_files_as_smdist_gave_them(finished, tmp_path):
    _, run, records = finished
    bases = {host: run.job_dir() / "hosts" / host for host in records}
    environ = {"PATH": os.environ["PATH"], "TRAINING_JOB_NAME": "hetero-feed"}
    computed = toolkit_per_host(DLC_PYTHON, TOOLKIT, list(bases.values()), environ, tmp_path)
    for host, (record, *_) in records.items():
        toolkit = computed[bases[host]]
        for name in GROUP_VARIABLES:
            assert toolkit["sm"][name] == record[name], f"{host} {name}"
        hosts = json.loads(record["SM_HOSTS"])
        assert toolkit["distribution_hosts"] == hosts[1:]
        assert toolkit["master"] == toolkit["MASTER_ADDR"] == record["MASTER_ADDR"] == hosts[1]
        assert toolkit["is_hetero"] is True
        # The container starts its runner exactly where torchrun ran here.
        assert toolkit["runner"] == (record["TORCHELASTIC_RUN_ID"] is not None), host


@pytest.mark.skipif(not DLC_PYTHON.is_file(), reason=f"no stand-in DLC python at {DLC_PYTHON}")
@pytest.mark.parametrize("launcher", ["torchrun", "torch_distributed"])
def test_every_hosts_environment_is_what_the_container_computes(launcher, tmp_path):
    spec = heterogeneous_job("oracle", "my-bucket").model_dump(mode="json", exclude_unset=True)
    spec["strategy"]["launcher"] = launcher
    job = plan(JobSpec.from_dict(spec))
    launch, inputs = job.launch, job.spec.inputs
    machine = Machine(num_cpus=os.cpu_count() or 1, num_gpus=0)  # what the oracle's host has
    built: dict[Path, dict[str, str]] = {}
    for index, host in enumerate(launch.all_hosts):
        group = launch.group_of(host)
        channels = {n: s.distribution for n, s in inputs.items() if group.name in s.instance_groups}
        config = HostConfig(
            dict(job.wire_hyperparameters),
            host_resource_config(launch, host, launch.interface),
            input_data_config(channels),
        )
        base = tmp_path / host
        (base / "input" / "config").mkdir(parents=True)
        for name, content in (("hyperparameters.json", config.hyperparameters),
                              ("resourceconfig.json", config.resource_config),
                              ("inputdataconfig.json", config.input_data_config)):  # fmt: skip
            (base / "input" / "config" / name).write_text(json.dumps(content))
        built[base] = host_environment(launch, index, config, machine, job_name=job.job_name,
                                       framework="pytorch", site=HostSite(base=base))  # fmt: skip
    # test_contract_oracle's ORACLE, for every host from one toolkit interpreter.
    environ = {"PATH": os.environ["PATH"], "TRAINING_JOB_NAME": job.job_name,
               "SAGEMAKER_TRAINING_MODULE": FRAMEWORK_MODULES["pytorch"]}  # fmt: skip
    scratch = tmp_path / "toolkit"
    scratch.mkdir()
    computed = toolkit_per_host(DLC_PYTHON, ORACLE, list(built), environ, scratch, ["pytorch"])
    for base, environment in built.items():
        container = computed[base]
        sm = {k: v for k, v in environment.items() if k.startswith("SM_")}
        assert sm == container["sm"], base.name
        framework = {name: environment[name] for name in FRAMEWORK_NAMES}
        assert framework == container["framework"], base.name
        assert environment["MASTER_ADDR"] == "algo-2"
