"""Run a CreateTrainingJob request's command as SageMaker would, on emulated hosts, without Docker.

SageMaker starts one container per instance of a training job. Each container has its own
``/opt/ml`` (the channels downloaded under ``input/data/<channel>``, the three config files under
``input/config``, empty ``model/`` and ``output/``), its own hostname ``algo-K`` that every other
host resolves, and runs ``AlgorithmSpecification.ContainerEntrypoint + ContainerArguments`` as
given. SDK v3's ``ModelTrainer`` puts its whole launch logic into that command (``/bin/bash -c
... sm_train.sh``, which reads ``/opt/ml`` and starts the driver from the ``sm_drivers``
channel), so a request can only be proven to train by running that command in such a container.

This module does that with Linux namespaces: per host, ``unshare`` gives a private mount table,
hostname, network and PID space (a host sees only its own processes, as a container does: the
MPI drivers' workers wait for "their" mpirun daemon by looking for it in ``/proc``); the host's
directory is bind-mounted at ``/opt/ml`` (when the
machine has no ``/opt/ml``, a throw-away overlay on ``/opt`` provides the mount point without
hiding anything), an ``/etc/hosts`` naming every ``algo-K`` is bind-mounted over the real one,
each host's ``eth0`` (10.0.0.K) is cabled to one bridge in a namespace of the job's own (so
every host has its own ports, as on SageMaker, and nothing is added to this machine's network),
and the command runs verbatim with the request's Environment, a container-like base environment
and a ``PATH`` whose first entry is the directory of the interpreter that plays the image's
python.

The hosts are the local backend's
(``smdist.backends.local.hosts.namespaced.HostCluster``: ``unshare`` + ``enter``, the job's
bridge, and its sshd, through which an ``ssh <host> <command>`` on any host, as mpirun issues,
runs inside the target host with that host's environment, as sshd would after SageMaker's MPI
setup).

Differences from SageMaker: no image (the given interpreter and this machine's tools play it),
one shared ``/tmp``, no GPUs, no route out of the job's network, every channel
copied (File mode) whatever its InputMode, nothing uploaded back to S3. Needs root, util-linux
and iproute2.

Usage: ``run_request(request, s3, hosts=2, python=..., root=tmp_path)`` -> ``list[HostResult]``.
What runs inside each namespace, and the ``ssh`` client, is the local backend's
``hosts.namespaced``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from integration.torch_exit import EXIT_ABORT, past_torch_exit_aborts

from smdist.backends.local.hosts.namespaced.cluster import HostCluster
from smdist.backends.local.hosts.namespaced.enter import OPT_ML
from smdist.backends.local.hosts.namespaced.probe import SYSTEM_PATH

# What a Deep Learning Container's image sets (Dockerfile ENV) and a container runtime adds.
IMAGE_ENV = {"PYTHONUNBUFFERED": "TRUE", "PYTHONDONTWRITEBYTECODE": "TRUE", "LANG": "C.UTF-8"}
KILL_GRACE = 5.0
NETWORK_INTERFACE = "eth0"


@dataclass(frozen=True)
class HostResult:
    """How one emulated host's container ended."""

    host: str  # algo-K
    returncode: int | None  # None: still running at the timeout, then killed
    stdout: str
    stderr: str
    root: Path  # the directory that was the host's /opt/ml
    timed_out: bool = False
    stopped: bool = False  # killed because another host failed (SageMaker stops the job)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


# ---- laying out /opt/ml ----------------------------------------------------------------------
def _split_s3(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://"):
        raise ValueError(f"channel S3Uri {uri!r} is not an s3:// URI")
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key


def channel_objects(s3: Any, uri: str) -> list[tuple[str, str, str]]:
    """``(bucket, key, path under the channel directory)`` for the S3Prefix ``uri``, by key.

    As SageMaker local mode lands them (``sagemaker.utils.download_folder``): a URI naming one
    object is that one file (by its base name); otherwise every object whose key starts with
    the prefix, at the key less the prefix (a leading "/" dropped).
    """
    bucket, prefix = _split_s3(uri)
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            key = item["Key"]
            if key == prefix and not key.endswith("/"):
                return [(bucket, key, key.rsplit("/", 1)[-1])]
            if not key.endswith("/"):  # "folder" markers are not files
                found.append((bucket, key, key[len(prefix) :].lstrip("/")))
    if not found:  # as SageMaker fails the job (ClientError: no objects under the S3 URL)
        raise ValueError(f"no S3 objects under channel S3Uri {uri!r}")
    return sorted(found, key=lambda entry: entry[1])


def _host_names(count: int) -> list[str]:
    return [f"algo-{index}" for index in range(1, count + 1)]


def _source(channel: dict[str, Any]) -> dict[str, Any]:
    source = channel["DataSource"].get("S3DataSource") or {}
    if source.get("S3DataType", "S3Prefix") != "S3Prefix":
        raise ValueError(f"channel {channel['ChannelName']!r}: only S3Prefix sources are emulated")
    return source


def _checkpoint_dir(request: dict[str, Any]) -> Path | None:
    """The checkpoint directory relative to /opt/ml, or None without CheckpointConfig."""
    config = request.get("CheckpointConfig")
    if not config:
        return None
    local = Path(config.get("LocalPath") or "/opt/ml/checkpoints")
    if OPT_ML not in local.parents:
        raise ValueError(f"CheckpointConfig.LocalPath {str(local)!r}: only /opt/ml/... emulated")
    return local.relative_to(OPT_ML)


def lay_out_hosts(
    request: dict[str, Any],
    s3: Any,
    *,
    hosts: int,
    root: Path,
    network_interface: str = NETWORK_INTERFACE,
) -> list[Path]:
    """Write ``root/algo-K`` as SageMaker fills ``/opt/ml`` of host K; return those directories.

    Channels are downloaded from ``s3`` (a boto3 S3 client): FullyReplicated channels to every
    host, ShardedByS3Key ones split by sorted key (object i to host i mod N).
    """
    # Imported here: the namespace side of this file must not need smdist.
    from smdist.contract.environment import input_data_config, resource_config

    names, channels = _host_names(hosts), request.get("InputDataConfig") or []
    sources = {c["ChannelName"]: _source(c) for c in channels}
    data_config = input_data_config(
        {name: s.get("S3DataDistributionType", "FullyReplicated") for name, s in sources.items()}
    )
    default_mode = request["AlgorithmSpecification"].get("TrainingInputMode", "File")
    for channel in channels:  # the mode SageMaker reports, though every channel is copied
        mode = channel.get("InputMode", default_mode)
        data_config[channel["ChannelName"]]["TrainingInputMode"] = mode
    objects = {name: channel_objects(s3, source["S3Uri"]) for name, source in sources.items()}
    instance_type, checkpoints = request["ResourceConfig"]["InstanceType"], _checkpoint_dir(request)
    roots = []
    for index, host in enumerate(names):
        host_root = Path(root) / host
        config_dir = host_root / "input" / "config"
        extra = [host_root / checkpoints] if checkpoints else []
        for directory in (config_dir, host_root / "model", host_root / "output/data", *extra):
            directory.mkdir(parents=True, exist_ok=True)
        files = {
            "hyperparameters.json": request.get("HyperParameters") or {},
            "resourceconfig.json": resource_config(names, host, instance_type, network_interface),
            "inputdataconfig.json": data_config,
        }
        for name, content in files.items():
            (config_dir / name).write_text(json.dumps(content, indent=1))
        for name, found in objects.items():
            sharded = data_config[name]["S3DistributionType"] == "ShardedByS3Key"
            (host_root / "input" / "data" / name).mkdir(parents=True, exist_ok=True)
            for position, (bucket, key, relative) in enumerate(found):
                if not sharded or position % hosts == index:
                    destination = host_root / "input" / "data" / name / relative
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    s3.download_file(bucket, key, str(destination))
        roots.append(host_root)
    return roots


# ---- the host's environment and command -------------------------------------------------------
def container_environment(
    request: dict[str, Any], host: str, *, python: Path, tools: Path, image_env: dict[str, str]
) -> dict[str, str]:
    """What the command's process sees: the image's ENV, the runtime's, the request's.

    Built from nothing, so no variable of this machine (AWS credentials above all) leaks in.
    """
    env = {
        **image_env,
        "HOME": "/root",
        "HOSTNAME": host,
        "TRAINING_JOB_NAME": request["TrainingJobName"],
        **(request.get("Environment") or {}),
    }
    # The image's python first (sm_train.sh takes `command -v python3`), then the ssh stand-in.
    env["PATH"] = ":".join([str(python.parent), str(tools), env.get("PATH", SYSTEM_PATH)])
    return env


def run_request(
    request: dict[str, Any],
    s3: Any,
    *,
    hosts: int | None = None,
    python: str | Path,
    root: str | Path,
    timeout: float = 300,
    image_env: dict[str, str] | None = None,
) -> list[HostResult]:
    """Lay out ``hosts`` emulated hosts (default: the request's InstanceCount) and run the
    request's command on all of them at once; return each host's result, algo-1 first.

    ``python``: the interpreter that plays the image's python (absolute; its directory comes
    first on PATH, symlinks kept so a virtual environment stays one). ``root``: a fresh work
    directory (``root/algo-K`` are the /opt/ml trees; ``root/run/algo-K`` holds each host's
    output). When a host exits non-zero the others are stopped, as SageMaker stops the job; at
    ``timeout`` seconds every host still running is killed.
    """
    root = Path(root).absolute()
    python = Path(python).absolute()
    count = hosts or request["ResourceConfig"]["InstanceCount"]
    names = _host_names(count)
    algorithm = request["AlgorithmSpecification"]
    argv = list(algorithm.get("ContainerEntrypoint") or []) + list(
        algorithm.get("ContainerArguments") or []
    )
    if not argv:
        raise ValueError("the request has no ContainerEntrypoint: the image's would run")
    roots = lay_out_hosts(request, s3, hosts=count, root=root)
    run = root / "run"
    run.mkdir(parents=True, exist_ok=True)
    started: list[subprocess.Popen] = []
    cluster = HostCluster(names, route_out=False, user_namespace=False)
    try:
        cluster.open()
        for index, (host, host_root) in enumerate(zip(names, roots, strict=True), start=1):
            env = container_environment(
                request, host, python=python, tools=cluster.tools,
                image_env=image_env or IMAGE_ENV,
            )  # fmt: skip
            (run / host).mkdir(exist_ok=True)
            with open(run / host / "stdout.log", "wb") as out, \
                    open(run / host / "stderr.log", "wb") as err:  # fmt: skip
                process = cluster.start(
                    index, host_root, argv, env, stdout=out, stderr=err, listen_ssh=True
                )
            started.append(process)
        codes, timed_out, stopped = _wait(started, timeout)
    finally:
        _stop(started)
        cluster.close()
    return [
        HostResult(
            host=host,
            returncode=codes[index],
            stdout=(run / host / "stdout.log").read_text(errors="replace"),
            stderr=(run / host / "stderr.log").read_text(errors="replace"),
            root=host_root,
            timed_out=index in timed_out,
            stopped=index in stopped,
        )
        for index, (host, host_root) in enumerate(zip(names, roots, strict=True))
    ]


def _kill_session(session: int, sig: int) -> None:
    """Signal every process of a host's session: launchers, ranks, ranks started by ssh."""
    for entry in Path("/proc").iterdir():
        try:
            # Fields after the ")" of the command name: state, ppid, pgrp, session.
            if (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rpartition(")")[2].split()[3]) == session
            ):
                os.kill(int(entry.name), sig)
        except (OSError, ValueError, IndexError):  # gone meanwhile
            pass


def _stop(processes: list[subprocess.Popen]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for process in processes:
            _kill_session(process.pid, sig)
        for process in processes:
            try:
                process.wait(KILL_GRACE)
            except subprocess.TimeoutExpired:
                pass


def _wait(processes: list[subprocess.Popen], timeout: float) -> tuple[list, set[int], set[int]]:
    """Exit codes (None: killed at the timeout); indexes timed out; indexes stopped."""
    deadline = time.monotonic() + timeout
    codes: list[int | None] = [None] * len(processes)
    timed_out: set[int] = set()
    stopped: set[int] = set()
    while None in codes:
        codes = [p.poll() if c is None else c for c, p in zip(codes, processes, strict=True)]
        running = [index for index, code in enumerate(codes) if code is None]
        failed = any(code not in (None, 0) for code in codes)
        if running and (failed or time.monotonic() > deadline):
            # SageMaker stops the whole job when one host fails.
            (stopped if failed else timed_out).update(running)
            _stop([processes[index] for index in running])
            codes = [None if i in timed_out else p.poll() for i, p in enumerate(processes)]
            break
        time.sleep(0.2)
    for process in processes:  # what a command left behind in its session
        _kill_session(process.pid, signal.SIGKILL)
    return codes, timed_out, stopped


def run_request_past_torch_exit_aborts(
    request: dict[str, Any],
    s3: Any,
    *,
    finished: Callable[[str], bool],
    root: str | Path,
    **options: Any,
) -> list[HostResult]:
    """``run_request``, again in a fresh ``root`` under ``torch_exit``'s rule: when a host failed,
    some rank aborted at exit, and ``finished(output of every host)`` says the script had done
    its work everywhere. Any other failure is returned as it is."""

    def aborted_after_finishing(results: list[HostResult]) -> bool:
        output = "".join(result.output for result in results)
        failed = any(result.returncode != 0 for result in results)
        return failed and EXIT_ABORT.search(output) is not None and finished(output)

    return past_torch_exit_aborts(
        lambda number: run_request(request, s3, root=f"{root}-{number}", **options),
        aborted_after_finishing,
    )
