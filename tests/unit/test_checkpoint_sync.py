"""Checkpoints reach the store while a local job runs: complete ones only, whole, never mixed
with another job's. The syncer's rounds are driven by hand here (no thread, a short settle)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from smdist.backends.local.data.artifacts import clash_note, merged_entries
from smdist.backends.local.data.checkpoint_store import CheckpointStore
from smdist.backends.local.data.checkpoint_sync import CheckpointSync, inodes, open_for_writing
from smdist.backends.local.hosts.folders import EmulatedHost

SETTLE = 0.2


class Notes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


def make_hosts(tmp_path: Path, count: int = 2) -> list[EmulatedHost]:
    hosts = [
        EmulatedHost(f"algo-{i + 1}", i, f"127.0.0.{11 + i}", tmp_path / "job" / f"algo-{i + 1}")
        for i in range(count)
    ]
    for host in hosts:
        host.checkpoints.mkdir(parents=True)
    return hosts


def syncer(tmp_path: Path, hosts, job: str = "job-1", fresh: bool = False) -> CheckpointSync:
    store = CheckpointStore.claim(tmp_path / "checkpoints" / "ddp", job, fresh)
    return CheckpointSync(store, hosts, Notes(), settle=SETTLE)  # type: ignore[arg-type]


def settled_round(sync: CheckpointSync) -> list[str]:
    """Two rounds a settle interval apart: what a file unchanged for that long gets."""
    sync.sync_round()
    time.sleep(SETTLE + 0.05)
    return sync.sync_round()


def names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir()) if directory.is_dir() else []


def test_a_complete_checkpoint_reaches_the_store_once_it_has_settled(tmp_path):
    hosts = make_hosts(tmp_path)
    sync = syncer(tmp_path, hosts)
    (hosts[0].checkpoints / "ckpt_10.pt").write_bytes(b"x" * 100)
    assert sync.sync_round() == []  # just appeared: it may still grow
    time.sleep(SETTLE + 0.05)
    assert sync.sync_round() == ["ckpt_10.pt (algo-1)"]
    assert (sync.store.target / "ckpt_10.pt").read_bytes() == b"x" * 100
    assert sync.sync_round() == []  # in the store already


def test_a_file_still_open_for_writing_is_not_synced_however_long_it_rests(tmp_path):
    hosts = make_hosts(tmp_path)
    sync = syncer(tmp_path, hosts)
    partial = hosts[0].checkpoints / "ckpt_20.pt"
    with open(partial, "wb") as writing:
        writing.write(b"half")
        writing.flush()
        assert open_for_writing(inodes(partial)) == inodes(partial)
        assert settled_round(sync) == []
        time.sleep(SETTLE + 0.05)
        assert sync.sync_round() == []
        assert names(sync.store.target) == []
    time.sleep(SETTLE + 0.05)
    assert sync.sync_round() == ["ckpt_20.pt (algo-1)"]  # closed: complete


def test_temporary_names_are_never_synced_and_hold_back_their_directory(tmp_path):
    hosts = make_hosts(tmp_path)
    sync = syncer(tmp_path, hosts)
    (hosts[0].checkpoints / ".tmp-123-checkpoint-000000020.pt").write_bytes(b"tmp")
    step = hosts[0].checkpoints / "checkpoint-500"
    step.mkdir()
    (step / "model.safetensors").write_bytes(b"m")
    (step / "optimizer.pt.tmp3fa2").write_bytes(b"o")  # being written, renamed in a moment
    assert settled_round(sync) == []
    os.replace(step / "optimizer.pt.tmp3fa2", step / "optimizer.pt")
    assert settled_round(sync) == ["checkpoint-500 (algo-1)"]
    assert names(sync.store.target) == ["checkpoint-500"]
    assert names(sync.store.target / "checkpoint-500") == ["model.safetensors", "optimizer.pt"]


def test_the_first_hosts_copy_wins_and_deletions_follow_once_nothing_is_pending(tmp_path):
    hosts = make_hosts(tmp_path)
    sync = syncer(tmp_path, hosts)
    (hosts[0].checkpoints / "ckpt_1.pt").write_text("algo-1")
    (hosts[1].checkpoints / "ckpt_1.pt").write_text("algo-2")
    assert settled_round(sync) == ["ckpt_1.pt (algo-1)"]
    assert (sync.store.target / "ckpt_1.pt").read_text() == "algo-1"
    # keep=1: the next checkpoint is written and the old one deleted at once.
    for host in hosts:
        (host.checkpoints / "ckpt_2.pt").write_text(host.name)
        (host.checkpoints / "ckpt_1.pt").unlink()
    sync.sync_round()
    assert names(sync.store.target) == ["ckpt_1.pt"]  # never without a checkpoint
    time.sleep(SETTLE + 0.05)
    assert sync.sync_round() == ["ckpt_2.pt (algo-1)"]
    assert names(sync.store.target) == ["ckpt_2.pt"]


def test_a_fresh_job_sets_the_earlier_checkpoints_aside_at_its_first_own(tmp_path):
    store = tmp_path / "checkpoints" / "ddp"
    store.mkdir(parents=True)
    (store / "ckpt_old.pt").write_text("earlier")
    hosts = make_hosts(tmp_path)
    sync = syncer(tmp_path, hosts, job="job-2", fresh=True)
    assert sync.store.restore(hosts) == 0
    assert settled_round(sync) == []
    assert names(store) == ["ckpt_old.pt"]  # nothing of its own yet: left alone
    (hosts[0].checkpoints / "ckpt_new.pt").write_text("mine")
    assert settled_round(sync) == ["ckpt_new.pt (algo-1)"]
    assert names(store) == ["ckpt_new.pt"]
    assert names(tmp_path / "checkpoints" / "ddp.before-job-2") == ["ckpt_old.pt"]
    assert any("were moved to" in line for line in sync.log.lines)  # type: ignore[attr-defined]


def test_a_job_finding_the_store_held_keeps_its_checkpoints_apart(tmp_path):
    first = syncer(tmp_path, make_hosts(tmp_path / "a"), job="job-a")
    hosts = make_hosts(tmp_path / "b")
    second = syncer(tmp_path, hosts, job="job-b")
    assert second.store.holder == "job-a"
    assert second.store.target == tmp_path / "checkpoints" / "ddp.from-job-b"
    (hosts[0].checkpoints / "ckpt_5.pt").write_text("b")
    assert settled_round(second) == ["ckpt_5.pt (algo-1)"]
    assert names(first.store.target) == []
    first.finish()  # job A ends: the store is free for the next job
    third = syncer(tmp_path, make_hosts(tmp_path / "c"), job="job-c")
    assert third.store.holder is None and third.store.target == first.store.target


def test_the_final_pass_takes_what_the_hosts_hold_without_waiting(tmp_path):
    hosts = make_hosts(tmp_path)
    sync = syncer(tmp_path, hosts)
    (hosts[1].checkpoints / "ckpt_9.pt").write_text("last")
    (hosts[1].checkpoints / ".tmp-9-ckpt_10.pt").write_text("cut short")
    sync.finish()
    assert names(sync.store.target) == ["ckpt_9.pt"]
    assert sync.log.lines[-1].startswith("[upload] 1 checkpoint file(s) kept in")  # type: ignore[attr-defined]


def test_model_directories_merge_with_the_last_hosts_copy_and_a_note(tmp_path):
    directories = []
    for rank, host in enumerate(("algo-1", "algo-2")):
        model = tmp_path / host
        model.mkdir()
        (model / f"model_{rank}.pth").write_text(host)
        (model / "config.json").write_text(host)
        directories.append((host, model))
    entries, clashes = merged_entries(directories)
    assert sorted(entries) == ["config.json", "model_0.pth", "model_1.pth"]
    assert entries["config.json"].read_text() == "algo-2"
    assert clashes == {"config.json": ["algo-1", "algo-2"]}
    assert "config.json (algo-1, algo-2: algo-2's copy packed)" in clash_note("m", clashes)
