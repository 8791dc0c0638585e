"""Input channels into emulated hosts: read in place where the hosts can be shown the source
read-only, copied (clone or sparse-aware) only where a copy is needed, and a copy the disk
cannot hold refused before it starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smdist.backends.local.data.channels import InputError, check_space, copy_file, stage_channels
from smdist.backends.local.hosts.folders import EmulatedHost
from smdist.spec.job import Input


def hosts(tmp_path: Path, count: int, inside: Path | None = None) -> list[EmulatedHost]:
    made = [
        EmulatedHost(
            f"algo-{index + 1}", index, "127.0.0.1", tmp_path / f"algo-{index + 1}", inside=inside
        )  # fmt: skip
        for index in range(count)
    ]
    for host in made:
        host.create(["train"])
    return made


def sparse_file(path: Path, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.write(b"head")
    os.truncate(path, size)
    return path


def test_a_copy_keeps_a_sparse_files_holes(tmp_path):
    source = sparse_file(tmp_path / "big.bin", 256 << 20)
    copy_file(source, tmp_path / "copy.bin")
    copied = tmp_path / "copy.bin"
    assert copied.stat().st_size == 256 << 20
    assert copied.stat().st_blocks * 512 < 1 << 20
    with open(copied, "rb") as handle:
        assert handle.read(4) == b"head"


def test_a_copy_the_disk_cannot_hold_is_refused_naming_channel_bytes_and_place(tmp_path):
    with pytest.raises(InputError) as refused:
        check_space("train", 1 << 62, tmp_path, replicated=True)
    message = str(refused.value)
    assert message.startswith(f"inputs.train: copying it into the hosts needs {1 << 62} bytes")
    assert f"on the disk of {tmp_path}" in message and "free" in message
    assert "--namespaces" in message


def test_hosts_in_namespaces_read_a_replicated_channel_in_place(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    sparse_file(data / "big.bin", 1 << 30)
    made = hosts(tmp_path, 2, inside=Path("/opt/ml"))
    inputs = {"train": Input(uri=data.as_uri())}
    distributions, views = stage_channels(inputs, made, tmp_path / "inputs", in_place=True)
    assert distributions == {"train": "FullyReplicated"}
    assert [(v.host, v.source, str(v.target)) for v in views] == [
        (0, data, "/opt/ml/input/data/train"),
        (1, data, "/opt/ml/input/data/train"),
    ]
    assert [list(host.data_dir.joinpath("train").iterdir()) for host in made] == [[], []]


def test_hosts_sharing_the_machine_each_get_a_sparse_copy_of_their_own(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    sparse_file(data / "big.bin", 1 << 30)
    made = hosts(tmp_path, 2)
    stage_channels({"train": Input(uri=data.as_uri())}, made, tmp_path / "inputs", False)
    copies = [host.data_dir / "train" / "big.bin" for host in made]
    assert [path.stat().st_size for path in copies] == [1 << 30, 1 << 30]
    assert copies[0].stat().st_ino != copies[1].stat().st_ino != (data / "big.bin").stat().st_ino
    assert sum(path.stat().st_blocks * 512 for path in copies) < 1 << 20


def test_each_host_gets_only_its_share_of_a_sharded_channel(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for index in range(5):
        (data / f"part-{index}.csv").write_text(f"{index}\n")
    made = hosts(tmp_path, 2, inside=Path("/opt/ml"))
    inputs = {"train": Input(uri=data.as_uri(), distribution="ShardedByS3Key")}
    _, views = stage_channels(inputs, made, tmp_path / "inputs", in_place=True)
    assert views == []
    shares = [sorted(p.name for p in (host.data_dir / "train").iterdir()) for host in made]
    assert shares == [["part-0.csv", "part-2.csv", "part-4.csv"], ["part-1.csv", "part-3.csv"]]
