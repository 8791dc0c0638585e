"""Data in, artifacts out: channels, model.tar.gz, output data and persistent checkpoints.

As SageMaker does in File mode:

- each input channel's files land in every host's ``input/data/<channel>/``: all of them
  (``FullyReplicated``) or a share of them (``ShardedByS3Key``: the files, sorted by key, dealt
  out to the hosts in turn). ``file://`` directories are read in place; ``s3://`` prefixes are
  downloaded once with boto3 (credentials and endpoint from the usual AWS configuration);
- after the job, every host's ``model/`` becomes one ``model.tar.gz`` and every host's
  ``output/data/`` one ``output.tar.gz`` under the job's output location, merged as SageMaker
  merges them, with a note naming any file more than one host wrote.

Checkpoints have their own modules: ``checkpoint_store`` and ``checkpoint_sync``.
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


def merged_entries(
    directories: list[tuple[str, Path]],
) -> tuple[dict[str, Path], dict[str, list[str]]]:
    """Every host's directory merged as SageMaker merges ``/opt/ml/model`` (and
    ``output/data``) into one archive: hosts in order, a later host's file replacing an earlier
    one's of the same name (SDK v2's local mode copies algo-1's, then algo-2's, ... over one
    another; the service documents only that names should not clash).

    Returns {name in the archive: the path packed} and {name: the hosts that wrote it} for
    every file more than one host wrote (the last of them is packed).
    """
    chosen: dict[str, Path] = {}
    writers: dict[str, list[str]] = {}
    for host, directory in directories:
        if not directory.is_dir():
            continue
        for entry in sorted(directory.rglob("*")):
            name = entry.relative_to(directory).as_posix()
            chosen[name] = entry
            if not entry.is_dir() or entry.is_symlink():
                writers.setdefault(name, []).append(host)
    return chosen, {name: hosts for name, hosts in writers.items() if len(hosts) > 1}


def package_entries(entries: dict[str, Path], target: Path) -> Path:
    """``target`` (a .tar.gz) holding ``entries`` (name in the archive -> path)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with tarfile.open(partial, "w:gz") as tar:
            for name in sorted(entries):
                tar.add(entries[name], arcname=name, recursive=False)
        os.replace(partial, target)
    except BaseException:  # a full disk: the partial archive must not keep it full
        partial.unlink(missing_ok=True)
        raise
    return target


def has_files(directory: Path) -> bool:
    return directory.is_dir() and any(p.is_file() for p in directory.rglob("*"))


def clash_note(archive: str, clashes: dict[str, list[str]], shown: int = 5) -> str:
    """The log's line naming the files more than one host wrote, and whose copy was packed."""
    items = [
        f"{name} ({', '.join(hosts)}: {hosts[-1]}'s copy packed)"
        for name, hosts in sorted(clashes.items())[:shown]
    ]
    more = f" and {len(clashes) - shown} more" if len(clashes) > shown else ""
    return (
        f"[upload] note: {len(clashes)} file(s) in {archive} were written by more than one "
        f"host; as on SageMaker the last host's copy is kept: {'; '.join(items)}{more}. Give "
        "each host's files their own names (e.g. write them from one rank) to keep them all"
    )


def upload_outputs(
    log: JobLog, hosts: list[EmulatedHost], output_dir: Path, keep_model: bool, began: float
) -> tuple[str | None, list[str]]:
    """What SageMaker uploads at the end besides checkpoints: every host's model directory
    as one ``model.tar.gz``, every host's output data as one ``output.tar.gz``.

    Returns the model artifacts' URI (None when the job failed or the model could not be
    packed) and what could not be kept, one sentence each: each archive on its own, so a model
    too big for the disk never costs the output data, and what was not packed stays in the
    hosts' folders. ``began``: when the upload started (checkpoints first), for the closing
    line.
    """
    model_uri, unkept = None, []
    if keep_model:
        entries, clashes = merged_entries([(host.name, host.model) for host in hosts])
        writers = [host for host in hosts if has_files(host.model)]
        try:
            model_uri = package_entries(entries, output_dir / "model.tar.gz").as_uri()
        except OSError as error:
            unkept.append(_not_packed("model.tar.gz", output_dir, error, writers, "model"))
        else:
            names = ", ".join(host.name for host in writers) or "no host"
            log.note(f"[upload] model directory of {names} -> {model_uri}")
            if clashes:
                log.note(clash_note("model.tar.gz", clashes))
    writers = [host for host in hosts if has_files(host.output_data)]
    if writers:
        entries, clashes = merged_entries([(host.name, host.output_data) for host in hosts])
        try:
            data = package_entries(entries, output_dir / "output.tar.gz")
        except OSError as error:
            unkept.append(_not_packed("output.tar.gz", output_dir, error, writers, "output/data"))
        else:
            log.note(f"[upload] output data -> {data.as_uri()}")
            if clashes:
                log.note(clash_note("output.tar.gz", clashes))
    for sentence in unkept:
        log.note(f"[upload] {sentence}")
    log.note(f"[upload] done in {time.monotonic() - began:.1f} s")
    return model_uri, unkept


def _not_packed(
    archive: str, output_dir: Path, error: OSError, writers: list[EmulatedHost], folder: str
) -> str:
    """The sentence for an archive that could not be written, and where its files stay."""
    why = error.strerror or str(error)
    stays = ", ".join(str(host.base / folder) for host in writers)
    where = f"its files stay in {stays}" if stays else f"no host wrote any file to {folder}"
    return f"{archive} could not be written to {output_dir}: {why}; {where}"
