"""File system channels (``fsx://``, ``efs://``) on the local backend: a real 2-host DDP job
(``smdist run``, torch) trains on an FSx for Lustre channel read from the directory
``--file-system`` maps to the file system, and writes to a read-write EFS channel that every
host shares; a read-only channel refuses writes where the hosts have namespaces of their own;
a channel whose file system is not mapped, or mapped to nothing, is refused before anything
starts (exit 2). The run on hosts sharing this machine (``--no-namespaces``, forced where
namespaces exist) also carries what test_emulated_hosts proved of such hosts: the log names
what sharing does not reproduce, and every host's folders (SM_MODEL_DIR, its output) are its
own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import assert_nothing_left, smdist_run

from smdist.backends.local.hosts.choice import SHARED_LIMITS
from smdist.backends.local.hosts.namespaced.probe import namespace_support

pytestmark = [pytest.mark.integration, pytest.mark.torch]

SCRIPT = Path(__file__).resolve().parent / "user_scripts" / "file_system_channels"
LUSTRE, EFS = "fs-0123456789abcdef0", "fs-0fedcba9876543210"
MOUNT_NAME = "abcdefgh"  # an FSx for Lustre mount name: the first part of its path
TOPOLOGY = ("--hosts", "2", "--processes-per-host", "1")
NAMESPACES = namespace_support().mode is not None
HOST_MODES = [
    pytest.param(
        "--namespaces",
        marks=pytest.mark.skipif(not NAMESPACES, reason=f"{namespace_support().problem}"),
        id="namespaces",
    ),
    pytest.param("--no-namespaces", id="sharing-this-machine"),
]
ROWS = 24


def write_job(directory: Path, inputs: dict[str, Any], **extra: Any) -> Path:
    job = {
        "name": "file-systems",
        "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "code": {"source_dir": str(SCRIPT), "entry_point": "train.py"},
        "inputs": inputs,
        # SageMaker reaches a file system through the job's VPC.
        "network": {
            "subnets": ["subnet-0123456789abcdef0"],
            "security_group_ids": ["sg-0123456789abcdef0"],
        },
        **extra,
    }
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def lustre_dataset(root: Path) -> Path:
    """What a client's mount of the Lustre file system shows: datasets/train/*.txt."""
    train = root / "datasets" / "train"
    train.mkdir(parents=True)
    for part in range(3):
        lines = [f"{i} {i + 1} {i + 2} {i + 3} {4 * i + 6}" for i in range(part * 8, part * 8 + 8)]
        (train / f"part-{part}.txt").write_text("\n".join(lines) + "\n")
    return train


def reports(run) -> list[dict]:
    found = sorted((run.job_dir() / "hosts").glob("*/output/data/report-*.json"))
    return [json.loads(path.read_text()) for path in found]


@pytest.mark.parametrize("mode", HOST_MODES)
def test_a_job_trains_on_an_fsx_channel_and_shares_a_read_write_efs_channel(tmp_path, mode):
    lustre, efs = tmp_path / "lustre", tmp_path / "efs"
    train = lustre_dataset(lustre)
    (efs / "scratch").mkdir(parents=True)
    inputs = {
        "train": {"uri": f"fsx://{LUSTRE}/{MOUNT_NAME}/datasets/train"},
        "shared": {"uri": f"efs://{EFS}/scratch", "access_mode": "rw"},
    }
    job = write_job(tmp_path, inputs)
    mapped = ("--file-system", f"{LUSTRE}={lustre}", "--file-system", f"{EFS}={efs}")
    run = smdist_run(job, tmp_path, *TOPOLOGY, *mapped, mode, timeout=300)
    assert run.returncode == 0, run.output
    found = reports(run)
    assert sorted(report["host"] for report in found) == ["algo-1", "algo-2"], run.output
    weights = {line.split("weights=")[1] for line in run.output.splitlines() if "weights=" in line}
    assert len(weights) == 1, run.output  # every rank ended with the same model
    written = sorted(path.name for path in (efs / "scratch").iterdir())
    assert written == ["rank-0-algo-1.txt", "rank-1-algo-2.txt"]  # one file system for all
    for report in found:
        assert report["rows"] == ROWS, report
        assert report["shared_files"] == written, report  # each host sees the other's file
        config = report["input_data_config"]
        assert sorted(config) == ["shared", "train"]
        assert config["train"]["TrainingInputMode"] == "File"
    assert f"is {train} here (--file-system {LUSTRE}={lustre})" in run.output
    for path in (run.job_dir() / "hosts").glob("*/output/data/report-*.json"):
        assert json.loads(path.read_text())["host"] == path.parents[2].name  # its host's own
    if mode == "--namespaces":
        for report in found:  # the read-only mount refuses it, as SageMaker's does
            assert report["channel"] == "/opt/ml/input/data/train", report
            assert report["write_to_train"] in ("EROFS", "EACCES", "EPERM"), report
        assert sorted(path.name for path in train.iterdir()) == [f"part-{i}.txt" for i in range(3)]
    else:  # links: not refused, and the log says so
        assert "cannot mount them read-only" in run.output
        # Hosts forced to share this machine (was test_emulated_hosts' forced-shared test): the
        # log says what that does not reproduce, and each host's folders are its own.
        [note] = [line for line in run.output.splitlines() if "namespaces turned off" in line]
        assert SHARED_LIMITS in note
        host_folder = str(run.job_dir() / "hosts" / "algo-2")
        commands = (run.job_dir() / "commands.txt").read_text()
        assert f"SM_MODEL_DIR={host_folder}/model" in commands or host_folder in run.output
    assert_nothing_left(tmp_path)


def test_channels_whose_file_system_is_not_mapped_or_mapped_to_nothing_are_refused(tmp_path):
    """One run with both: every such channel is named, before anything starts."""
    inputs = {
        "train": {"uri": f"fsx://{LUSTRE}/{MOUNT_NAME}/datasets/train"},  # not mapped
        "data": {"uri": f"efs://{EFS}/scratch", "access_mode": "rw"},  # mapped to nothing
    }
    missing = tmp_path / "not-there"
    run = smdist_run(
        write_job(tmp_path, inputs), tmp_path, *TOPOLOGY, "--file-system", f"{EFS}={missing}",
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 2, run.output
    assert "inputs.train.uri" in run.output
    assert f"file system {LUSTRE} has no directory here" in run.output
    assert f"--file-system {LUSTRE}=" in run.output
    assert "inputs.data.uri" in run.output and EFS in run.output
    assert f"mapped to {missing}" in run.output and "not a directory" in run.output
    assert not (tmp_path / ".smdist" / "jobs").exists()  # nothing was made
