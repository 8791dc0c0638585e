"""Heterogeneous clusters on the local backend: every group's hosts emulated, this machine's
GPUs to the hosts of GPU types only, each host's config files and channels its group's, and the
runner started on the distribution hosts only; ``smdist plan --hosts`` shows every host."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from smdist.backends.local.data.channel_groups import stage_channels_on_groups
from smdist.backends.local.hosts.folders import EmulatedHost, host_config
from smdist.backends.local.preparation.files import host_groups
from smdist.backends.local.preparation.layout import plan_layout
from smdist.backends.local.processes.commands import build_commands, host_channels, local_launch
from smdist.errors import SpecError
from smdist.planning.host_view import hosts_document, hosts_text
from smdist.planning.plan import plan
from smdist.spec.job import Input, JobSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conformance_cases import heterogeneous_job  # noqa: E402

NAMES = ["algo-1", "algo-2", "algo-3"]


def hetero_plan(launcher: str = "torchrun"):
    data = heterogeneous_job("t", "my-bucket").model_dump(mode="json", exclude_unset=True)
    data["strategy"]["launcher"] = launcher
    return plan(JobSpec.from_dict(data))


def made_hosts(tmp_path: Path) -> list[EmulatedHost]:
    return [
        EmulatedHost(name, index, f"127.0.0.{11 + index}", tmp_path / name)
        for index, name in enumerate(NAMES)
    ]


def test_every_groups_hosts_run_and_only_gpu_types_get_this_machines_gpus():
    layout = plan_layout(hetero_plan(), job_name="j", region="r", cpus=8, gpus=["0", "1"])
    assert layout.hosts == 3
    assert layout.host_gpus == [[], ["0"], ["1"]]
    assert layout.launch.hosts == ("algo-2", "algo-3") and layout.world_size == 2
    (note,) = [n for n in layout.notes if n.startswith("instance groups")]
    assert "data: algo-1 (ml.c5.2xlarge, the script once)" in note
    assert "gpu: algo-2, algo-3 (ml.g5.xlarge, distributed)" in note


def test_hosts_cannot_be_resized_on_instance_groups():
    with pytest.raises(SpecError, match="every group's hosts"):
        plan_layout(hetero_plan(), job_name="j", region="r", cpus=8, gpus=[], hosts=2)
    assert plan_layout(hetero_plan(), job_name="j", region="r", cpus=8, gpus=[], hosts=3)


def test_each_host_gets_its_groups_config_and_channels(tmp_path):
    job = hetero_plan()
    layout = plan_layout(job, job_name="j", region="r", cpus=8, gpus=[])
    addresses = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]  # hosts named by their addresses
    launch = local_launch(layout, addresses)
    assert launch.hosts == ("10.0.0.2", "10.0.0.3")
    channels = {"raw": "FullyReplicated", "train": "FullyReplicated"}
    for host, group, channel in ((0, "data", "raw"), (2, "gpu", "train")):
        own = host_channels(job, launch, addresses[host], channels)
        assert list(own) == [channel]
        view = EmulatedHost(addresses[host], host, addresses[host], tmp_path / str(host))
        config = host_config(job, layout, view, addresses, own, "lo", launch.instance_groups)
        assert config.resource_config["current_group_name"] == group
        assert list(config.input_data_config) == [channel]


@pytest.mark.parametrize("launcher", ["torchrun", "torch_distributed"])
def test_the_runner_starts_on_the_distribution_hosts_only(launcher, tmp_path):
    job = hetero_plan(launcher)
    layout = plan_layout(job, job_name="j", region="r", cpus=8, gpus=[])
    environments = [{"SM_USER_ARGS": '["--steps", "2"]'} for _ in NAMES]
    data, first, second = build_commands(
        local_launch(layout, NAMES), layout, made_hosts(tmp_path), environments,
        program=job.program, python="py", master_port=7777, bin_dir=tmp_path / "bin",
    )  # fmt: skip
    assert data.argv == ["py", "--", job.program, "--steps", "2"]
    if launcher == "torch_distributed":
        assert first.argv[:3] == ["py", "-m", "torch.distributed.run"]
        assert first.argv[first.argv.index("--master_addr") + 1] == "algo-2"
        assert "torchrun_when_ready.py" in second.argv[1] and second.argv[2] == "algo-2"
        assert second.argv[second.argv.index("--node_rank") + 1] == "1"
    else:  # smdist's launcher on every host: it starts torchrun on the gpu hosts itself
        assert first.argv == second.argv == data.argv


def test_a_channel_of_a_group_is_staged_on_its_hosts_only(tmp_path):
    raw, train = tmp_path / "raw", tmp_path / "train"
    for folder, count in ((raw, 1), (train, 4)):
        folder.mkdir()
        for index in range(count):
            (folder / f"part-{index}").write_text(str(index))
    hosts = made_hosts(tmp_path / "hosts")
    for host in hosts:
        host.create(["raw", "train"])
    inputs = {
        "raw": Input(uri=raw.as_uri(), instance_groups=["data"]),
        "train": Input(uri=train.as_uri(), distribution="ShardedByS3Key", instance_groups=["gpu"]),
    }
    groups = ["data", "gpu", "gpu"]
    staged, views = stage_channels_on_groups(inputs, hosts, groups, tmp_path / "dl", False)
    assert staged == {"raw": "FullyReplicated", "train": "ShardedByS3Key"}
    assert [p.name for p in (hosts[0].data_dir / "raw").iterdir()] == ["part-0"]
    assert not list((hosts[0].data_dir / "train").iterdir())
    shares = [sorted(p.name for p in (h.data_dir / "train").iterdir()) for h in hosts[1:]]
    assert shares == [["part-0", "part-2"], ["part-1", "part-3"]]  # shared by the gpu hosts
    assert views == []


def test_in_place_views_name_the_hosts_of_the_group(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a").write_text("1")
    hosts = [
        EmulatedHost(h.name, h.index, h.address, h.base, inside=Path("/opt/ml"))
        for h in made_hosts(tmp_path / "hosts")
    ]
    inputs = {"raw": Input(uri=raw.as_uri(), instance_groups=["gpu"])}
    _, views = stage_channels_on_groups(inputs, hosts, ["data", "gpu", "gpu"], tmp_path, True)
    assert [view.host for view in views] == [1, 2]


def test_host_groups_of_the_staged_hosts(tmp_path):
    layout = plan_layout(hetero_plan(), job_name="j", region="r", cpus=8, gpus=[])
    assert host_groups(layout.plan, made_hosts(tmp_path)) == ["data", "gpu", "gpu"]


def test_plan_hosts_shows_every_group_and_host():
    job = hetero_plan("torch_distributed")
    document = hosts_document(job)
    assert document["host_count"] == 3
    assert [h["host"] for h in document["hosts"]] == NAMES
    assert [g["distribution"] for g in document["instance_groups"]] == [False, True]
    data, first, _ = document["hosts"]
    assert data["argv"][:2] == ["python", "--"] and first["argv"][0] == "torchrun"
    assert json.loads(data["environment"]["SM_CHANNELS"]) == ["raw"]
    assert json.loads(first["environment"]["SM_CHANNELS"]) == ["train"]
    assert data["environment"]["SM_NUM_GPUS"] == "0" and first["environment"]["SM_NUM_GPUS"] == "1"
    text = "\n".join(hosts_text(job))
    assert "data: 1 x ml.c5.2xlarge, gpu: 2 x ml.g5.xlarge (distributed)" in text
    assert "algo-1 (host 1 of 3): runs the program once: instance group data" in text
