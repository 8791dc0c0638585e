"""File system channels on the local backend: ``--file-system ID=DIR`` read as an option, the
channel's directory under DIR (FSx for Lustre's mount name dropped, as a client's mount shows
it), every missing mapping or directory refused before anything is made, and how the hosts
see the channel (a read-only mount in namespaces, a link otherwise)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import pytest

from smdist.backends.local.data.file_systems import (
    below_mount,
    mount_channels,
    mounted_channels,
    shared_machine_notes,
)
from smdist.backends.local.hosts.folders import EmulatedHost
from smdist.backends.local.options import LocalOptions
from smdist.backends.local.preparation.files import local_layout
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.spec.job import Input

LUSTRE, EFS = "fs-0123456789abcdef0", "fs-0fedcba9876543210"
OPT_ML = Path("/opt/ml")


def hosts(base: Path, count: int = 2, inside: Path | None = None) -> list[EmulatedHost]:
    made = [
        EmulatedHost(f"algo-{i + 1}", i, "127.0.0.1", base / f"algo-{i + 1}", inside=inside)
        for i in range(count)
    ]
    for host in made:
        host.create(["train", "shared"])
    return made


def channels(**uris: str | tuple[str, str]) -> dict[str, Input]:
    made = {}
    for name, given in uris.items():
        uri, mode = given if isinstance(given, tuple) else (given, None)
        made[name] = Input(uri=uri, access_mode=mode)
    return made


def test_file_system_option_reads_id_equals_dir_from_the_command_line_or_a_dict():
    read = LocalOptions.read("local", {"file_systems": [f"{LUSTRE}=/data/lustre", f"{EFS}=rel"]})
    assert read.file_systems == {LUSTRE: Path("/data/lustre"), EFS: Path("rel")}
    assert LocalOptions.read("local", {"file_systems": {LUSTRE: "/x"}}).file_systems == {
        LUSTRE: Path("/x")
    }
    assert LocalOptions.read("local", {}).file_systems == {}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["/data/lustre"], "is not FILE_SYSTEM_ID=DIRECTORY"),
        (["fs-1=/x"], "'fs-1' is not a file system id"),
        ([f"{LUSTRE}="], "names no directory"),
        (3, "neither ID=DIR texts nor a dict"),
    ],
)
def test_a_malformed_file_system_option_is_refused_naming_it(given, said):
    with pytest.raises(SpecError) as error:
        LocalOptions.read("local", {"file_systems": given})
    problem = error.value.problems[0]
    assert problem.path == "options.file_systems" and said in problem.message
    assert "DIR/<path>" in (problem.valid or "")  # what the option means


@pytest.mark.parametrize(
    ("uri", "below"),
    [
        (f"fsx://{LUSTRE}/abcdefgh/datasets/train", "datasets/train"),
        (f"fsx://{LUSTRE}/abcdefgh", "."),
        (f"efs://{EFS}/scratch/run", "scratch/run"),
        (f"efs://{EFS}", "."),
    ],
)
def test_the_channels_path_below_the_mount_is_what_a_clients_mount_shows(uri, below):
    file_system = Input(uri=uri).file_system
    assert file_system is not None
    assert below_mount(file_system) == PurePosixPath(below)


def test_each_channel_reads_its_directory_under_the_mapped_one(tmp_path):
    (tmp_path / "lustre" / "datasets" / "train").mkdir(parents=True)
    (tmp_path / "efs").mkdir()
    inputs = channels(
        train=f"fsx://{LUSTRE}/abcdefgh/datasets/train",
        shared=(f"efs://{EFS}/", "rw"),
        plain=(tmp_path / "lustre").as_uri(),
    )
    found = mounted_channels(inputs, {LUSTRE: tmp_path / "lustre", EFS: tmp_path / "efs"})
    assert sorted(found) == ["shared", "train"]  # file:// channels are not file systems
    assert found["train"].directory == tmp_path / "lustre" / "datasets" / "train"
    assert found["train"].read_only and not found["shared"].read_only
    assert found["shared"].directory == tmp_path / "efs"


def test_every_unmapped_or_missing_file_system_is_refused_at_once(tmp_path):
    (tmp_path / "lustre").mkdir()
    inputs = channels(
        train=f"fsx://{LUSTRE}/abcdefgh/datasets/train",  # mapped; no such folder in it
        shared=f"efs://{EFS}/scratch",  # not mapped
    )
    with pytest.raises(SpecError) as error:
        mounted_channels(inputs, {LUSTRE: tmp_path / "lustre"})
    first, second = error.value.problems
    assert first.path == "inputs.train.uri" and "datasets/train" in first.message
    assert second.path == "inputs.shared.uri"
    assert f"file system {EFS} has no directory here" in second.message
    assert f"--file-system {EFS}=/path/to/dir" in (second.valid or "")
    assert "options={'file_systems'" in (second.valid or "")


def test_a_mapping_to_no_directory_is_refused_naming_the_option(tmp_path):
    inputs = channels(shared=f"efs://{EFS}/scratch")
    with pytest.raises(SpecError) as error:
        mounted_channels(inputs, {EFS: tmp_path / "missing"})
    problem = error.value.problems[0]
    assert f"--file-system {EFS}={tmp_path / 'missing'}" in problem.message
    assert "not a directory" in problem.message


def test_a_path_climbing_out_of_the_file_system_is_refused(tmp_path):
    inputs = channels(shared=f"efs://{EFS}/../etc")
    with pytest.raises(SpecError, match="climbs out"):
        mounted_channels(inputs, {EFS: tmp_path})


def test_hosts_in_namespaces_mount_a_read_only_channel_and_link_a_read_write_one(tmp_path):
    (tmp_path / "lustre" / "train").mkdir(parents=True)
    (tmp_path / "efs").mkdir()
    inputs = channels(train=f"fsx://{LUSTRE}/abcdefgh/train", shared=(f"efs://{EFS}", "rw"))
    found = mounted_channels(inputs, {LUSTRE: tmp_path / "lustre", EFS: tmp_path / "efs"})
    made = hosts(tmp_path / "job" / "hosts", inside=OPT_ML)
    views = mount_channels(found, made, in_place=True)
    assert [(v.host, v.source, v.target) for v in views] == [
        (0, tmp_path / "lustre" / "train", OPT_ML / "input" / "data" / "train"),
        (1, tmp_path / "lustre" / "train", OPT_ML / "input" / "data" / "train"),
    ]
    for host in made:
        assert host.data_dir.joinpath("train").is_dir()  # the mount point
        assert host.data_dir.joinpath("shared").readlink() == tmp_path / "efs"
    assert shared_machine_notes(inputs, made) == []


def test_hosts_sharing_this_machine_link_every_channel_and_say_ro_is_not_enforced(tmp_path):
    (tmp_path / "lustre" / "train").mkdir(parents=True)
    inputs = channels(train=f"fsx://{LUSTRE}/abcdefgh/train")
    found = mounted_channels(inputs, {LUSTRE: tmp_path / "lustre"})
    made = hosts(tmp_path / "job" / "hosts")
    assert mount_channels(found, made, in_place=False) == []
    for host in made:
        assert host.data_dir.joinpath("train").readlink() == tmp_path / "lustre" / "train"
    (note,) = shared_machine_notes(inputs, made)
    assert "train" in note and "not refused" in note


def test_a_read_write_channel_hidden_in_another_folder_of_tmp_is_refused_in_namespaces(tmp_path):
    elsewhere = Path("/tmp") / f"smdist-test-efs-{tmp_path.name}"  # not the job's folder of /tmp
    elsewhere.mkdir(exist_ok=True)
    try:
        found = mounted_channels(channels(shared=(f"efs://{EFS}", "rw")), {EFS: elsewhere})
        with pytest.raises(SpecError) as error:
            mount_channels(found, hosts(tmp_path, count=1, inside=OPT_ML), in_place=True)
        problem = error.value.problems[0]
        assert "a /tmp of their own" in problem.message
        assert "--no-namespaces" in (problem.valid or "")
        assert mount_channels(found, hosts(tmp_path / "shared", count=1), in_place=False) == []
    finally:
        shutil.rmtree(elsewhere)


def test_the_layout_checks_the_mappings_before_anything_is_made_and_notes_them(tmp_path):
    (tmp_path / "lustre" / "train").mkdir(parents=True)
    spec = {
        "name": "fs",
        "strategy": {"kind": "pytorch_ddp"},
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "inputs": {"train": f"fsx://{LUSTRE}/abcdefgh/train"},
        "network": {"subnets": ["subnet-0123456789abcdef0"],
                    "security_group_ids": ["sg-0123456789abcdef0"]},
    }  # fmt: skip
    planned = plan(spec)
    with pytest.raises(SpecError, match="has no directory here"):
        local_layout(planned, "fs-1", LocalOptions())
    options = LocalOptions(file_systems={LUSTRE: tmp_path / "lustre"})
    layout = local_layout(planned, "fs-1", options)
    assert any(f"is {tmp_path / 'lustre' / 'train'} here" in note for note in layout.notes)
