"""The jobs test_file_system_channels and test_tensorboard_local both read, each made once per
test process: for each way of running hosts (``--namespaces``, ``--no-namespaces``) one real
2-host DDP job (``smdist run``, torchrun on every host) of ``user_scripts/plain_file_systems``
that trains on an FSx for Lustre channel read from the directory ``--file-system`` maps to the
file system, shares a read-write EFS channel, and keeps TensorBoard logs: written to
``/opt/ml/output/tensorboard`` itself in namespaces, as in a SageMaker container, and to the
``LocalPath`` of ``tensorboardoutputconfig.json`` by hosts sharing this machine.

Both modules mark themselves ``xdist_group(GROUP)``, so that one worker runs them and makes
each job once. The ranks are plain Python: what the jobs prove is smdist's channels and logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import Run, smdist_run

from smdist.backends.local.hosts.namespaced.probe import namespace_support

GROUP = "file_system_jobs"
SCRIPT = Path(__file__).resolve().parent / "user_scripts" / "plain_file_systems"
LUSTRE, EFS = "fs-0123456789abcdef0", "fs-0fedcba9876543210"
MOUNT_NAME = "abcdefgh"  # an FSx for Lustre mount name: the first part of its path
TOPOLOGY = ("--hosts", "2", "--processes-per-host", "1")
NAMESPACES = namespace_support().mode is not None
ROWS = 24
TENSORBOARD_URI = "s3://my-bucket/tensorboard"
# How the script finds its TensorBoard folder under each way of running hosts.
TENSORBOARD_HOW = {"--namespaces": "literal", "--no-namespaces": "config"}


def host_modes(namespaces_id: str = "namespaces", sharing_id: str = "sharing-this-machine"):
    """The two ways of running hosts as parameters (namespaces skipped where there are none)."""
    return [
        pytest.param(
            "--namespaces",
            marks=pytest.mark.skipif(not NAMESPACES, reason=f"{namespace_support().problem}"),
            id=namespaces_id,
        ),
        pytest.param("--no-namespaces", id=sharing_id),
    ]


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


MEAN_Y = sum(4 * i + 6 for i in range(ROWS)) / ROWS  # what every rank fits from every share


@dataclass
class FileSystemJob:
    """A finished job, the test folder it ran in, and its file systems' directories."""

    run: Run
    folder: Path
    lustre: Path
    efs: Path
    train: Path


_jobs: dict[str, FileSystemJob] = {}


def file_system_job(mode: str, tmp_path_factory: pytest.TempPathFactory) -> FileSystemJob:
    """The job of ``mode`` (``--namespaces`` or ``--no-namespaces``), run on first use."""
    if mode not in _jobs:
        folder = tmp_path_factory.mktemp(f"file-systems{mode}")
        lustre, efs = folder / "lustre", folder / "efs"
        train = lustre_dataset(lustre)
        (efs / "scratch").mkdir(parents=True)
        inputs = {
            "train": {"uri": f"fsx://{LUSTRE}/{MOUNT_NAME}/datasets/train"},
            "shared": {"uri": f"efs://{EFS}/scratch", "access_mode": "rw"},
        }
        job = write_job(
            folder, inputs, hyperparameters={"tensorboard": TENSORBOARD_HOW[mode]},
            tensorboard={"s3_uri": TENSORBOARD_URI},
        )  # fmt: skip
        mapped = ("--file-system", f"{LUSTRE}={lustre}", "--file-system", f"{EFS}={efs}")
        run = smdist_run(job, folder, *TOPOLOGY, *mapped, mode, timeout=300)
        _jobs[mode] = FileSystemJob(run, folder, lustre, efs, train)
    return _jobs[mode]
