"""File system channels (``fsx://``, ``efs://``) on the local backend: a real 2-host DDP job
(``smdist run``, torchrun on every host) trains on an FSx for Lustre channel read from the
directory ``--file-system`` maps to the file system, and writes to a read-write EFS channel
that every host shares; a read-only channel refuses writes where the hosts have namespaces of
their own; a channel whose file system is not mapped, or mapped to nothing, is refused before
anything starts (exit 2). The run on hosts sharing this machine (``--no-namespaces``, forced
where namespaces exist) also carries what test_emulated_hosts proved of such hosts: the log
names what sharing does not reproduce, and every host's folders (SM_MODEL_DIR, its output) are
its own.

The jobs (one per way of running hosts) are ``file_system_jobs``': test_tensorboard_local reads
their TensorBoard logs.
"""

from __future__ import annotations

import json

import pytest
from file_system_jobs import (
    EFS,
    GROUP,
    LUSTRE,
    MEAN_Y,
    MOUNT_NAME,
    ROWS,
    TOPOLOGY,
    file_system_job,
    host_modes,
    write_job,
)
from local_jobs import assert_nothing_left, smdist_run

from smdist.backends.local.hosts.choice import SHARED_LIMITS

# One worker runs this module and test_tensorboard_local, so each job is made once (xdist).
pytestmark = [pytest.mark.integration, pytest.mark.torch, pytest.mark.xdist_group(GROUP)]


def reports(run) -> list[dict]:
    found = sorted((run.job_dir() / "hosts").glob("*/output/data/report-*.json"))
    return [json.loads(path.read_text()) for path in found]


@pytest.mark.parametrize("mode", host_modes())
def test_a_job_trains_on_an_fsx_channel_and_shares_a_read_write_efs_channel(tmp_path_factory, mode):
    job = file_system_job(mode, tmp_path_factory)
    run, lustre, efs, train = job.run, job.lustre, job.efs, job.train
    assert run.returncode == 0, run.output
    found = reports(run)
    assert sorted(report["host"] for report in found) == ["algo-1", "algo-2"], run.output
    weights = {line.split("weights=")[1] for line in run.output.splitlines() if "weights=" in line}
    # Every rank ended with the same model, fitted from every rank's share of the rows.
    assert len(weights) == 1, run.output
    written = sorted(path.name for path in (efs / "scratch").iterdir())
    assert written == ["rank-0-algo-1.txt", "rank-1-algo-2.txt"]  # one file system for all
    for report in found:
        assert report["rows"] == ROWS, report
        assert report["mean_y"] == MEAN_Y, report
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
    assert_nothing_left(job.folder)


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
