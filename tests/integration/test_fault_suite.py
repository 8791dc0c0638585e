"""Faults a machine or a careless hand does to a local job, each one real: a job folder made
read-only while the job runs, secrets in the caller's environment of an MPI job, a control file
replaced by a link, a job record edited by hand, a field name with a right-to-left override.

Each case asserts that smdist ends in bounded time (a subprocess timeout), names the cause,
exits 1 or 2 (never 70, an internal error), leaves no process behind and touches nothing
outside the job's folder. No test measures time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from local_jobs import (
    assert_nothing_left,
    checksums,
    clean_environ,
    files_holding_secrets,
    finish,
    smdist_cli,
    smdist_run,
)

from smdist.backends.local.hosts.namespaced.probe import namespace_support

pytestmark = pytest.mark.integration

SCRIPT = """
    import os, sys, time
    print(f"hello from {os.environ['SM_CURRENT_HOST']}", flush=True)
    while not os.path.exists(os.environ["GO_ON"]):
        time.sleep(0.05)
    with open(os.path.join(os.environ["SM_MODEL_DIR"], "done.txt"), "w") as done:
        done.write("done\\n")
"""

# What a user's shell may hold: none of it may reach a file.
AWS_SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIACANARY0NEVER0DISK",
    "AWS_SECRET_ACCESS_KEY": "canary/secret+access/key/never/on/disk/0123",
    "AWS_SESSION_TOKEN": "canary-session-token-never-on-disk-FwoGZXIvYXdzE",
}


def write_job(tmp_path: Path, go_on: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(textwrap.dedent(SCRIPT))
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            name: faulty
            strategy: {{kind: mwms}}
            cluster: {{instance_type: ml.c5.xlarge, instance_count: 2}}
            code: {{source_dir: src, entry_point: train.py}}
            environment: {{GO_ON: "{go_on}"}}
            """
        )
    )
    return job


def wait_for(log: Path, text: str, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def mount_namespaces_allowed() -> bool:
    probe = ["unshare", "--mount", "--propagation", "private", "true"]
    return shutil.which("unshare") is not None and subprocess.run(probe).returncode == 0


@pytest.mark.skipif(not mount_namespaces_allowed(), reason="mount namespaces are not allowed")
def test_a_job_folder_made_read_only_while_it_runs_ends_the_job(tmp_path):
    """The folder turns read-only mid-job (as a full or failing disk does): the ranks fail to
    save, and smdist still ends (it hung for ever when its final record could not be written),
    says why, and leaves nothing running."""
    go_on = tmp_path / "go-on"
    job = write_job(tmp_path, go_on)
    root = tmp_path / ".smdist"
    log = tmp_path / "smdist.log"
    # smdist in a mount namespace of its own, where its folder can be made read-only for it
    # alone; the hosts share this machine's files, so they see the change too.
    command = [
        "unshare", "--mount", "--propagation", "private", "--", sys.executable, "-m",
        "smdist.cli.app", "run", str(job), "--root", str(root), "--no-namespaces",
    ]  # fmt: skip
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command, cwd=tmp_path, env=clean_environ(), stdout=handle, stderr=subprocess.STDOUT
        )
    try:
        wait_for(log, "hello from algo-2", process)
        [job_dir] = (root / "jobs").iterdir()
        inside = ["nsenter", f"--target={process.pid}", "--mount", "--"]
        subprocess.run([*inside, "mount", "--bind", str(job_dir), str(job_dir)], check=True)
        subprocess.run(
            [*inside, "mount", "-o", "remount,bind,ro", str(job_dir), str(job_dir)], check=True
        )
        go_on.touch()
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = log.read_text(errors="replace")
    assert process.returncode == 1, output
    assert "Read-only file system" in output
    assert "could not write the job's record" in output
    own = [line for line in output.splitlines() if not line.startswith("algo-")]
    assert not [line for line in own if "Traceback" in line], output
    assert_nothing_left(tmp_path)


# One rank per host under mpirun (model parallelism's launch; no framework is needed for a
# script that imports none): rank 1 starts on algo-2 through the ssh stand-in.
MPI_SCRIPT = """
    import os
    print(f"rank {os.environ['OMPI_COMM_WORLD_RANK']} started", flush=True)
"""


def test_an_mpi_job_writes_no_secret_of_the_callers_environment(tmp_path):
    """Hosts sharing this machine reach each other through the ssh stand-in, which starts a
    login from the host's own environment: its file names the variables and holds only
    smdist's per-host values, never the caller's keys and tokens (it held all of them)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(MPI_SCRIPT))
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            """
            name: mpi
            strategy: {kind: sdmp, version: 1, partitions: 1, processes_per_host: 1}
            cluster: {instance_type: ml.p3.16xlarge, instance_count: 2}
            code: {source_dir: src, entry_point: train.py}
            """
        )
    )
    run = smdist_run(job, tmp_path, "--no-namespaces", env=AWS_SECRETS)
    assert run.returncode == 0, run.output
    # Rank 1 ran on algo-2, started there through the stand-in (mpirun tags its lines).
    lines = run.output.splitlines()
    assert [line for line in lines if line.startswith("algo-2") and "rank 1 started" in line], lines
    files = sorted((run.job_dir() / "bin").glob("environment-algo-*.json"))
    assert [path.name for path in files] == ["environment-algo-1.json", "environment-algo-2.json"]
    assert files_holding_secrets(tmp_path / ".smdist", AWS_SECRETS) == []
    names = json.loads(files[1].read_text())["names"]
    assert {"AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "SM_CURRENT_HOST"} <= set(names)
    assert_nothing_left(tmp_path)


def test_stop_replaces_a_linked_control_file_and_never_writes_through_it(tmp_path):
    """``stop-requested`` in a job's folder is a dangling link to a path elsewhere: ``smdist
    stop`` replaces the link, stops the job and creates nothing outside the folder (it wrote
    through the link)."""
    go_on = tmp_path / "go-on"
    job = write_job(tmp_path, go_on)
    process, log = smdist_run(job, tmp_path, start_only=True)
    outside = tmp_path / "elsewhere" / "never-made.txt"
    outside.parent.mkdir()
    try:
        wait_for(log, "hello from algo-2", process)
        [job_dir] = (tmp_path / ".smdist" / "jobs").iterdir()
        (job_dir / "stop-requested").symlink_to(outside)
        stopped = smdist_cli(tmp_path, "stop", job_dir.name, "--root", str(tmp_path / ".smdist"))
        assert stopped.returncode in (0, 1), stopped.stdout + stopped.stderr
        run = finish(process, log, tmp_path / ".smdist", timeout=120)
    finally:
        go_on.touch()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not outside.exists()
    assert list(outside.parent.iterdir()) == []
    assert not (job_dir / "stop-requested").is_symlink()
    assert "Stopped" in run.output, run.output
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize(
    ("field", "value"),
    [("hosts", 5), ("supervisor", ["a"]), ("status", {"a": 1}), ("exit_codes", [1])],
)
def test_a_hand_edited_record_of_the_wrong_types_is_refused_by_status(tmp_path, field, value):
    """A ``job.json`` of the right shape with a field of the wrong type: ``smdist status``
    exits 2 naming the record, the field and what it should hold (it exited 70, or printed
    the wrong value with exit 0)."""
    job_dir = tmp_path / ".smdist" / "jobs" / "edited"
    job_dir.mkdir(parents=True)
    record = {"name": "edited", "backend": "local", "status": "Completed", "hosts": ["algo-1"]}
    (job_dir / "job.json").write_text(json.dumps({**record, field: value}))
    result = smdist_cli(tmp_path, "status", "edited", "--root", str(tmp_path / ".smdist"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "job.json" in result.stderr and repr(field) in result.stderr, result.stderr


def test_a_field_path_with_a_right_to_left_override_is_shown_escaped(tmp_path):
    """A key with U+202E (or a Cyrillic look-alike) is printed as its escape, in the path as
    in the value, so the message shows what the file holds."""
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: tricky\nstrategy: {kind: pytorch_ddp, \u202ednik: x, k\u0456nd2: y}\n"
        "cluster: {instance_type: ml.c5.xlarge, instance_count: 2}\n",
        encoding="utf-8",
    )
    result = smdist_cli(tmp_path, "validate", str(job))
    assert result.returncode == 2, result.stdout + result.stderr
    shown = result.stdout + result.stderr
    assert "\u202e" not in shown and "\u0456" not in shown
    assert "\\u202ednik" in shown and "k\\u0456nd2" in shown


# Steps of a restartable job: the kill at step KILL_AT (after the checkpoint of step 50) leaves
# four times as many for it to land mid-training on a loaded machine; each run trains all of
# them (the reference run too), so no more.
MAX_STEPS = 500
KILL_AT = 100


def restartable_job(tmp_path: Path, name: str) -> Path:
    """The ready DDP entry point with one restart, long enough to lose a rank mid-training."""
    values = {"epochs": 100000, "max_steps": MAX_STEPS, "samples": 256, "batch_size": 16,
              "log_every": 25, "checkpoint_every": 50}  # fmt: skip
    job = tmp_path / f"{name}.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            name: {name}
            strategy: {{kind: pytorch_ddp, processes_per_host: 1, max_restarts: 1}}
            cluster: {{instance_type: ml.c5.xlarge, instance_count: 2}}
            hyperparameters: {values}
            checkpoint: {{s3_uri: "s3://my-bucket/checkpoints/{name}"}}
            """
        )
    )
    return job


def rank_process(marker: Path, host: str) -> int | None:
    """The pid of ``host``'s training process (torchrun's worker) of the job marked ``marker``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        wanted = [f"SM_CURRENT_HOST={host}".encode(), b"LOCAL_RANK=0"]
        if all(item in environ for item in wanted) and str(marker).encode() in b"".join(environ):
            return int(entry.name)
    return None


def signal_rank_mid_training(job: Path, tmp_path: Path, step: int, signum: int, *args: str):
    """Run ``job``; once it logged ``step``, send ``signum`` to algo-2's rank; the finished Run."""
    process, log = smdist_run(job, tmp_path, *args, start_only=True)
    try:
        wait_for(log, f"[metrics] step={step} ", process, timeout=240)
        victim = rank_process(tmp_path, "algo-2")
        assert victim is not None, log.read_text()
        os.kill(victim, signum)
        return finish(process, log, tmp_path / ".smdist", timeout=240)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.torch
def test_a_rank_killed_mid_training_restarts_and_ends_as_if_uninterrupted(tmp_path):
    """kill -9 of algo-2's rank with ``max_restarts: 1``: torchrun restarts every rank from the
    last checkpoint in a fresh rendezvous round, and the job ends with the weights of a run
    that lost nothing (the restarted ranks met the last round's addresses and failed)."""
    reference = smdist_run(restartable_job(tmp_path, "uninterrupted"), tmp_path, timeout=240)
    assert reference.returncode == 0, reference.output
    interrupted = restartable_job(tmp_path, "interrupted")
    run = signal_rank_mid_training(interrupted, tmp_path, KILL_AT, signal.SIGKILL)
    assert run.returncode == 0, run.output
    assert "resum" in run.output.lower(), run.output
    assert checksums(run.output) == checksums(reference.output), run.output
    assert_nothing_left(tmp_path)


RESTORES_OVER_A_SOCKET = Path(__file__).with_name("restores_a_checkpoint_over_a_socket.py")


@pytest.mark.torch
def test_a_corrupt_checkpoint_is_named_as_the_cause_not_the_peer_it_disconnected(tmp_path):
    """Every host restores a checkpoint that is not a pickle: the main rank (algo-1) fails to
    load it and its peer (algo-2), waiting for the weights, loses the connection, in both
    rounds of ``max_restarts: 1``. The reason names algo-1's UnpicklingError, never algo-2's
    connection error (which host's launcher reports first is timing: the recorded fixture
    ``torchrun_2hosts_corrupt_checkpoint_peer_first`` holds the other order).

    The naming is smdist's, so the ranks are plain Python under torchrun that restore as a DDP
    script does (restores_a_checkpoint_over_a_socket.py); the ready entry point's own resume
    runs in the restart test above."""
    # Found, not imported: only torchrun needs it, in the job's own processes.
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    store = tmp_path / ".smdist" / "checkpoints" / "corrupt"
    store.mkdir(parents=True)
    (store / "checkpoint-000000200.pt").write_bytes(b"not a pickle at all\n" * 64)
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(RESTORES_OVER_A_SOCKET, source / "train.py")
    job = tmp_path / "corrupt.yaml"
    job.write_text(
        textwrap.dedent(
            """
            name: corrupt
            strategy: {kind: pytorch_ddp, processes_per_host: 1, max_restarts: 1}
            cluster: {instance_type: ml.c5.xlarge, instance_count: 2}
            code: {source_dir: src, entry_point: train.py}
            checkpoint: {s3_uri: "s3://my-bucket/checkpoints/corrupt"}
            """
        )
    )
    run = smdist_run(job, tmp_path, timeout=240)
    assert run.returncode == 1, run.output
    reason = json.loads((run.job_dir() / "job.json").read_text())["failure_reason"]
    assert "on algo-1" in reason and "UnpicklingError" in reason, reason
    assert "by peer" not in reason, reason
    # The peer did lose its connection: the reason had its error to choose from.
    assert "Connection reset by peer" in run.output, run.output
    assert (store / "checkpoint-000000200.pt").read_bytes().startswith(b"not a pickle")
    assert_nothing_left(tmp_path)


ON_SMALL_DISK = Path(__file__).with_name("on_small_disk.py")

# Writes a finished 64 KiB file to TARGET ("model" or "checkpoints"), then MEGABYTES of random
# bytes (which no archive shrinks) or until the disk is full, then goes on printing STEPS lines.
FILLING = """
    import errno, os, sys, time
    target = os.environ["SM_MODEL_DIR"]
    if os.environ["TARGET"] == "checkpoints":
        target = os.path.join(os.path.dirname(target), "checkpoints")
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "finished.bin"), "wb") as handle:
        handle.write(os.urandom(64 << 10))
    path = os.path.join(target, "filling.bin")
    try:
        with open(path, "wb") as handle:
            for _ in range(int(os.environ["MEGABYTES"])):
                handle.write(os.urandom(1 << 20))
                handle.flush()
        print(f"wrote {os.path.getsize(path)} bytes", flush=True)
    except OSError as error:
        assert error.errno == errno.ENOSPC, error
        print(f"the disk is full: {error}", flush=True)
    for step in range(int(os.environ["STEPS"])):
        print(f"step {step}", flush=True)
        time.sleep(0.05)
"""


def filling_job(
    tmp_path: Path, target: str, megabytes: int, steps: int = 0, hosts: int = 1
) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(FILLING))
    job = tmp_path / "job.yaml"
    environment = {"TARGET": target, "MEGABYTES": str(megabytes), "STEPS": str(steps)}
    job.write_text(
        textwrap.dedent(
            f"""
            name: filling
            strategy: {{kind: mwms}}
            cluster: {{instance_type: ml.c5.xlarge, instance_count: {hosts}}}
            code: {{source_dir: src, entry_point: train.py}}
            environment: {environment}
            checkpoint: {{s3_uri: "s3://my-bucket/checkpoints/filling"}}
            """
        )
    )
    return job


def on_small_disk(tmp_path: Path, size: str) -> tuple[list[str], Path]:
    """The command that runs smdist with a ``size`` tmpfs as its root (``.smdist``), and the
    folder that receives what was left on it once smdist has ended."""
    kept = tmp_path / "left-on-disk"
    prefix = ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
              str(ON_SMALL_DISK), size, str(tmp_path / ".smdist"), str(kept), "--"]  # fmt: skip
    return prefix, kept


def smdists_own_lines(output: str) -> list[str]:
    """What smdist printed itself: every line not from a host."""
    return [line for line in output.splitlines() if not line.startswith("algo-")]


@pytest.mark.skipif(not mount_namespaces_allowed(), reason="mount namespaces are not allowed")
def test_a_model_too_big_to_pack_fails_the_job_in_one_line_and_leaves_no_partial_archive(
    tmp_path,
):
    """The script completes, but its model cannot be packed on an 8 MB disk: smdist exits 1
    saying why in one line, without a traceback, and the half-written ``model.tar.gz.partial``
    is gone (it stayed, and kept the disk full); the job's record names the cause."""
    job = filling_job(tmp_path, "model", megabytes=5)
    prefix, kept = on_small_disk(tmp_path, "8m")
    run = smdist_run(job, tmp_path, "--no-namespaces", prefix=prefix, timeout=120)
    assert run.returncode == 1, run.output
    assert "wrote 5242880 bytes" in run.output, run.output
    own = smdists_own_lines(run.output)
    assert not [line for line in own if "Traceback" in line], run.output
    assert [line for line in own if "No space left on device" in line], run.output
    assert list(kept.rglob("*.partial")) == [], sorted(kept.rglob("*"))
    [record] = kept.glob("jobs/*/job.json")
    saved = json.loads(record.read_text())
    assert saved["status"] == "Failed", saved
    assert "could not keep the job's output" in saved["failure_reason"], saved
    assert "No space left on device" in saved["failure_reason"], saved
    model = sorted(path.name for path in kept.glob("jobs/*/hosts/algo-1/model/*"))
    assert model == ["filling.bin", "finished.bin"], model
    assert files_holding_secrets(kept) == []
    assert_nothing_left(tmp_path)


@pytest.mark.skipif(not mount_namespaces_allowed(), reason="mount namespaces are not allowed")
def test_a_disk_filled_during_training_ends_the_job_and_loses_nothing_that_was_finished(tmp_path):
    """The script writes a finished checkpoint, then fills an 8 MB disk and goes on printing.
    The job ends, exit 1, its record naming the full disk (the last record could not be
    written); every line the script printed still reaches smdist's output (the lines the log
    could not take were lost), smdist's own lines hold no traceback, and the finished
    checkpoint stays where the host wrote it, the log saying the store could not take it."""
    job = filling_job(tmp_path, "checkpoints", megabytes=100, steps=20)
    prefix, kept = on_small_disk(tmp_path, "8m")
    run = smdist_run(job, tmp_path, prefix=prefix, timeout=120)
    assert run.returncode == 1, run.output
    said = [line for line in run.output.splitlines() if line.startswith("algo-1")]
    assert [line for line in said if "the disk is full" in line], run.output
    assert [line for line in said if line.endswith("| step 19")], run.output
    own = smdists_own_lines(run.output)
    assert not [line for line in own if "Traceback" in line], run.output
    assert [line for line in own if "No space left on device" in line], run.output
    [record] = kept.glob("jobs/*/job.json")
    saved = json.loads(record.read_text())
    assert saved["status"] == "Failed", saved
    assert "No space left on device" in saved["failure_reason"], saved
    [finished] = kept.glob("jobs/*/hosts/algo-1/checkpoints/finished.bin")
    assert finished.stat().st_size == 64 << 10
    assert "checkpoint finished.bin could not be copied" in run.output, run.output
    assert list(kept.rglob("*.partial")) == [] and list(kept.rglob(".smdist-sync-*")) == []
    assert files_holding_secrets(kept) == []
    assert_nothing_left(tmp_path)


# Reads a 1 GiB channel file that is one hole (but for its first bytes), then tries to change it.
READING = """
    import os
    path = os.path.join(os.environ["SM_CHANNEL_TRAIN"], "big.bin")
    print(f"{os.environ['SM_CURRENT_HOST']} sees {os.path.getsize(path)} bytes", flush=True)
    with open(path, "rb") as handle:
        assert handle.read(8) == b"original"
        handle.seek(700 << 20)
        assert handle.read(4096) == bytes(4096)
    try:
        with open(path, "r+b") as handle:
            handle.write(b"CHANGED!")
        print("wrote into its channel", flush=True)
    except OSError as error:
        print(f"cannot write into its channel: {error.strerror}", flush=True)
"""


def channel_job(tmp_path: Path, script: str, uri: str, distribution: str) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(script))
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            name: channels
            strategy: {{kind: mwms}}
            cluster: {{instance_type: ml.c5.xlarge, instance_count: 2}}
            code: {{source_dir: src, entry_point: train.py}}
            inputs:
              train: {{uri: "{uri}", distribution: {distribution}}}
            """
        )
    )
    return job


def disk_usage(folder: Path) -> int:
    """The bytes the files under ``folder`` take on its disk (links not followed)."""
    return sum(
        os.lstat(os.path.join(directory, name)).st_blocks * 512
        for directory, _, names in os.walk(folder)
        for name in names
    )


NAMESPACES = pytest.param(
    "--namespaces",
    id="hosts-in-namespaces",
    marks=pytest.mark.skipif(namespace_support().mode is None, reason="no namespaces here"),
)


@pytest.mark.parametrize("mode", [NAMESPACES, pytest.param("--no-namespaces", id="shared")])
def test_a_sparse_file_channel_is_read_without_filling_the_disk(tmp_path, mode):
    """A ``file://`` channel holding a sparse 1 GiB file: every host reads all of it, the job
    folder takes a few KiB (it took 1 GiB of real bytes per host, until the disk was full), and
    the user's file is unchanged: hosts in namespaces see it read-only, hosts sharing the
    machine each a sparse copy of its own."""
    data = tmp_path / "data"
    data.mkdir()
    with open(data / "big.bin", "wb") as handle:
        handle.write(b"original")
    os.truncate(data / "big.bin", 1 << 30)
    job = channel_job(tmp_path, READING, data.as_uri(), "FullyReplicated")
    run = smdist_run(job, tmp_path, mode, timeout=120)
    assert run.returncode == 0, run.output
    for host in ("algo-1", "algo-2"):
        assert f"{host} sees {1 << 30} bytes" in run.output, run.output
    refused = "cannot write into its channel: Read-only file system"
    assert run.output.count(refused if mode == "--namespaces" else "wrote into its channel") == 2
    assert disk_usage(run.job_dir()) < 4 << 20, disk_usage(run.job_dir())
    assert (data / "big.bin").read_bytes()[:8] == b"original"
    assert os.stat(data / "big.bin").st_blocks * 512 < 1 << 20
    assert_nothing_left(tmp_path)


@pytest.mark.skipif(not mount_namespaces_allowed(), reason="mount namespaces are not allowed")
def test_a_channel_copy_that_cannot_fit_is_refused_before_anything_runs(tmp_path):
    """A ``ShardedByS3Key`` channel (each host its own copy of its share) that needs 6 MiB on a
    4 MiB disk: smdist exits 2 before any process starts, naming the channel, the bytes needed
    and free, and where; no partial copy is left, and the job's folder keeps a Failed record
    that ``smdist status`` reads (it left no record, and status asked for an AWS region)."""
    data = tmp_path / "data"
    data.mkdir()
    for index in range(2):
        (data / f"part-{index}.bin").write_bytes(os.urandom(3 << 20))
    job = channel_job(tmp_path, "print('never runs', flush=True)", data.as_uri(), "ShardedByS3Key")
    prefix, kept = on_small_disk(tmp_path, "4m")
    run = smdist_run(job, tmp_path, "--no-namespaces", prefix=prefix, timeout=120)
    assert run.returncode == 2, run.output
    assert "never runs" not in run.output
    assert "Traceback" not in run.output, run.output
    [line] = [line for line in run.output.splitlines() if "inputs.train" in line]
    assert f"needs {6 << 20} bytes" in line and "free" in line and str(tmp_path) in line, line
    assert [path for path in kept.rglob("*") if path.is_file() and path.suffix == ".bin"] == []
    [job_dir] = (kept / "jobs").iterdir()
    saved = json.loads((job_dir / "job.json").read_text())
    assert saved["status"] == "Failed" and "inputs.train" in saved["failure_reason"], saved
    status = smdist_cli(tmp_path, "status", job_dir.name, "--root", str(kept))
    assert status.returncode == 1, status.stdout + status.stderr
    assert "Failed" in status.stdout and "region" not in status.stdout + status.stderr
    assert sorted(path.name for path in data.iterdir()) == ["part-0.bin", "part-1.bin"]
    assert_nothing_left(tmp_path)


def test_status_of_a_local_job_folder_without_a_record_says_so(tmp_path):
    """A job folder left without ``job.json`` (its supervisor killed before writing it):
    ``smdist status`` says what the folder is, exit 2 (it asked for an AWS region)."""
    (tmp_path / ".smdist" / "jobs" / "unrecorded" / "logs").mkdir(parents=True)
    result = smdist_cli(tmp_path, "status", "unrecorded", "--root", str(tmp_path / ".smdist"))
    assert result.returncode == 2, result.stdout + result.stderr
    shown = result.stdout + result.stderr
    assert "local job folder without its record" in shown and "region" not in shown, shown


@pytest.mark.torch
def test_a_stopped_rank_fails_the_job_through_the_collective_timeout(tmp_path):
    """SIGSTOP of algo-2's rank mid-training (a frozen process: it takes no SIGTERM until it is
    continued): its peer's collective times out, the job fails naming the timeout, the frozen
    rank is killed after the grace period, and nothing is left."""
    job = restartable_job(tmp_path, "frozen")
    # 5 s: as short as a loaded machine's slow start of the ranks allows (the same timeout
    # bounds their joining the group); the freeze is waited out for this long.
    spec = job.read_text().replace("max_restarts: 1", "max_restarts: 0, collective_timeout: 5")
    job.write_text(spec.replace(f"'max_steps': {MAX_STEPS}", "'max_steps': 1000000"))
    # Frozen at the first metric line: the freeze, not the training, is what is waited out.
    run = signal_rank_mid_training(job, tmp_path, 25, signal.SIGSTOP, "--grace", "2")
    assert run.returncode == 1, run.output
    assert "Failed" in run.output
    assert "timeout" in run.output.lower() or "timed out" in run.output.lower(), run.output
    assert_nothing_left(tmp_path)
