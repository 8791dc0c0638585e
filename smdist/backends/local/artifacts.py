"""Data in, artifacts out: channels, model.tar.gz, output data and persistent checkpoints.

As SageMaker does in File mode:

- each input channel's files land in every host's ``input/data/<channel>/``: all of them
  (``FullyReplicated``) or a share of them (``ShardedByS3Key``: the files, sorted by key, dealt
  out to the hosts in turn). ``file://`` directories are read in place; ``s3://`` prefixes are
  downloaded once with boto3 (credentials and endpoint from the usual AWS configuration);
- after the job, the first host's ``model/`` becomes ``model.tar.gz`` and its ``output/data/``
  ``output.tar.gz`` under the job's output location;
- with a checkpoint configuration (``checkpoint_s3_uri`` on SageMaker), a persistent local
  directory plays the bucket: it is copied into every host's ``checkpoints/`` before the job
  and receives what the hosts left there after it, so a re-run resumes.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from smdist.errors import Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.local.hosts import EmulatedHost
    from smdist.backends.local.logs import JobLog
    from smdist.spec.job import Input, JobSpec


class InputError(RuntimeError):
    """An input channel could not be read (missing directory, S3 access)."""


def file_uri_path(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.netloc + parsed.path)).expanduser()


def _channel_files(root: Path) -> list[tuple[Path, str]]:
    """(file, path relative to the channel) for every file under ``root``, sorted by key."""
    if root.is_file():
        return [(root, root.name)]
    found = []
    for current, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(current) / name
            found.append((path, path.relative_to(root).as_posix()))
    return sorted(found, key=lambda entry: entry[1])


def _download_s3(uri: str, destination: Path, channel: str) -> Path:
    try:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise SpecError(
            [
                Problem(
                    f"inputs.{channel}.uri",
                    "s3:// inputs need boto3 to run locally",
                    uri,
                    "pip install boto3 (with AWS credentials configured), or a file:// directory",
                )
            ]
        ) from None
    parsed = urlparse(uri)
    bucket, prefix = parsed.netloc, parsed.path.lstrip("/")
    destination.mkdir(parents=True, exist_ok=True)
    try:
        client = boto3.client("s3")
        paginator = client.get_paginator("list_objects_v2")
        count = 0
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                key = item["Key"]
                if key.endswith("/"):
                    continue
                relative = key[len(prefix) :].lstrip("/") or os.path.basename(key)
                target = destination / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(bucket, key, str(target))
                count += 1
    except (BotoCoreError, ClientError) as error:
        raise InputError(f"inputs.{channel}: cannot read {uri}: {error}") from None
    if count == 0:
        raise InputError(f"inputs.{channel}: {uri} holds no objects")
    return destination


def stage_channels(
    inputs: Mapping[str, Input], hosts: list[EmulatedHost], download_dir: Path
) -> dict[str, str]:
    """Fill every host's channels; returns channel -> S3DistributionType."""
    distributions = {}
    for channel, source in inputs.items():
        if source.uri.startswith("s3://"):
            root = _download_s3(source.uri, download_dir / channel, channel)
        else:
            root = file_uri_path(source.uri)
            if not root.exists():
                raise SpecError(
                    [
                        Problem(
                            f"inputs.{channel}.uri",
                            "does not exist on this machine",
                            source.uri,
                            "an existing directory, as file:///absolute/path",
                        )
                    ]
                )
        files = _channel_files(root)
        for host in hosts:
            if source.distribution == "ShardedByS3Key":
                share = files[host.index :: len(hosts)]
            else:
                share = files
            target_root = host.data_dir / channel
            for path, relative in share:
                target = target_root / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        distributions[channel] = source.distribution
    return distributions


def output_location(spec: JobSpec, jobs_dir: Path, job_name: str) -> tuple[Path, str | None]:
    """Where artifacts go: output_path (file://) / <job> / output, else the job's directory.

    Returns the directory and a note when an s3:// output_path is kept local instead.
    """
    if spec.output_path and spec.output_path.startswith("file://"):
        return file_uri_path(spec.output_path) / job_name / "output", None
    local = jobs_dir / job_name / "output"
    note = None
    if spec.output_path:
        note = (
            f"output_path {spec.output_path} is not written by local runs; artifacts go to {local}"
        )
    return local, note


def package_directory(source: Path, target: Path) -> Path:
    """``target`` (a .tar.gz) holding the contents of ``source`` at its root."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        if source.is_dir():
            for entry in sorted(source.rglob("*")):
                tar.add(entry, arcname=entry.relative_to(source).as_posix(), recursive=False)
    os.replace(partial, target)
    return target


def has_files(directory: Path) -> bool:
    return directory.is_dir() and any(p.is_file() for p in directory.rglob("*"))


def kept_files(store: Path) -> int:
    """How many files the persistent checkpoint store holds."""
    return sum(1 for p in store.rglob("*") if p.is_file()) if store.is_dir() else 0


def restore_checkpoints(store: Path, hosts: list[EmulatedHost]) -> int:
    """Copy the persistent checkpoints into every host; returns how many files there were."""
    if not store.is_dir():
        return 0
    files = [p for p in store.rglob("*") if p.is_file()]
    for host in hosts:
        shutil.copytree(store, host.checkpoints, dirs_exist_ok=True)
    return len(files)


def save_checkpoints(store: Path, hosts: list[EmulatedHost], set_aside: Path | None = None) -> int:
    """Make the persistent store hold what the hosts' checkpoint directories hold now.

    The first host is copied last, so its files win where hosts wrote the same name. With
    ``set_aside`` (a job started fresh, which restored nothing) the store's earlier files are
    moved there instead of being replaced, and only when the hosts hold checkpoints of their
    own: a fresh job that wrote none leaves the store as it was. Returns the files kept.
    """
    staging = store.with_name(store.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for host in reversed(hosts):
        if host.checkpoints.is_dir():
            shutil.copytree(
                host.checkpoints,
                staging,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns(".tmp-*"),
            )
    count = sum(1 for p in staging.rglob("*") if p.is_file())
    if set_aside is not None and count == 0:
        shutil.rmtree(staging)
        return 0
    previous = store.with_name(store.name + ".previous")
    shutil.rmtree(previous, ignore_errors=True)
    if set_aside is not None and has_files(store):
        os.replace(store, set_aside)
    elif store.exists():
        os.replace(store, previous)
    os.replace(staging, store)
    shutil.rmtree(previous, ignore_errors=True)
    return count


def upload_outputs(
    log: JobLog,
    hosts: list[EmulatedHost],
    output_dir: Path,
    checkpoint_store: Path | None,
    keep_model: bool,
    set_aside: Path | None = None,
) -> str | None:
    """What SageMaker uploads at the end: checkpoints, the main host's model and output data.

    ``set_aside``: where the store's earlier checkpoints go once a job started fresh has
    written its own (see ``save_checkpoints``). Returns the model artifacts' URI
    (``model.tar.gz``), or None when the job failed.
    """
    main = hosts[0]
    began = time.monotonic()
    model_uri = None
    if checkpoint_store is not None:
        earlier = has_files(checkpoint_store)
        saved = save_checkpoints(checkpoint_store, hosts, set_aside)
        if set_aside is not None and not saved:
            log.note(
                f"[upload] the job wrote no checkpoints; {checkpoint_store} keeps what it held"
            )
        else:
            moved = f"; the earlier ones were moved to {set_aside}" if set_aside and earlier else ""
            log.note(f"[upload] {saved} checkpoint file(s) kept in {checkpoint_store}{moved}")
    if keep_model:
        model_uri = package_directory(main.model, output_dir / "model.tar.gz").as_uri()
        log.note(f"[upload] {main.name}'s model directory -> {model_uri}")
    if has_files(main.output_data):
        data = package_directory(main.output_data, output_dir / "output.tar.gz")
        log.note(f"[upload] {main.name}'s output data -> {data.as_uri()}")
    log.note(f"[upload] done in {time.monotonic() - began:.1f} s")
    return model_uri
