"""Input channels into the emulated hosts, as SageMaker's File mode delivers them, copying only
what must be copied.

- ``FullyReplicated``: the same data on every host, which a host only reads. Hosts in
  namespaces of their own see the source itself, read-only, at
  ``/opt/ml/input/data/<channel>`` (a read-only bind mount each host makes as it starts: a
  ``ChannelView``): nothing is copied, and a script cannot change the user's files. Hosts that
  share this machine's files cannot be given such a view; a symlink or hardlinks would let a
  script write through them into the user's files (and another host's view of them), so each
  host gets a copy of its own, as on SageMaker.
- ``ShardedByS3Key``: each host gets its own share of the files (sorted by key, dealt out to
  the hosts in turn), copied into its channel folder.

A copy is a copy-on-write clone where the filesystem makes one, else a sparse-aware copy (a
file's holes stay holes, so a sparse file takes no more room in a host than in the source). An
``s3://`` channel is downloaded once into the job's ``inputs/<channel>``; being the job's own,
its files are hard-linked into the hosts where each host has its own (a share), and copied
where hosts would share them. Before copying, the bytes the copies take (the files' allocated
blocks) are checked against the free space where they go: a copy that cannot fit is refused
before anything runs (``InputError``), naming the channel, the bytes needed and free, and where.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from smdist.backends.local.data.artifacts import file_uri_path
from smdist.errors import Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.spec.job import Input

FICLONE = 0x40049409  # ioctl: make the target a copy-on-write clone of the source (Linux)
CHUNK = 1 << 20


class InputError(RuntimeError):
    """An input channel could not be read (missing directory, S3 access) or copied."""


@dataclass(frozen=True)
class ChannelView:
    """``source`` (on this machine) shown read-only at ``target`` (a path inside host
    ``host``, under its /opt/ml) as the host starts: a channel read in place."""

    host: int
    source: Path
    target: Path


def channel_files(root: Path) -> list[tuple[Path, str]]:
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


def allocated(path: Path) -> int:
    """The bytes ``path`` takes on its disk (a sparse file's holes take none)."""
    return path.stat().st_blocks * 512


def copy_file(source: Path, target: Path) -> None:
    """``source``'s bytes as ``target``: a copy-on-write clone where the filesystem makes one,
    else only the source's data written (its holes stay holes). A failed copy leaves no
    ``target``."""
    with open(source, "rb") as reading, open(target, "wb") as writing:
        try:
            try:
                fcntl.ioctl(writing.fileno(), FICLONE, reading.fileno())
                return
            except OSError:
                pass  # no clones here (ext4, tmpfs, another filesystem): copy the data
            _copy_data(reading.fileno(), writing.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                target.unlink()
            raise


def _copy_data(source: int, target: int) -> None:
    size = os.fstat(source).st_size
    offset = 0
    while offset < size:
        try:
            start = os.lseek(source, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno == errno.ENXIO:  # nothing but a hole up to the end
                break
            raise
        end = os.lseek(source, start, os.SEEK_HOLE)
        while start < end:
            chunk = os.pread(source, min(CHUNK, end - start), start)
            if not chunk:
                break
            os.pwrite(target, chunk, start)
            start += len(chunk)
        offset = end
    os.ftruncate(target, size)


def check_space(channel: str, needed: int, where: Path, replicated: bool = False) -> None:
    """Refuse a copy of ``needed`` bytes into ``where`` that its disk cannot hold;
    ``replicated``: a FullyReplicated channel, which hosts in namespaces read in place."""
    free = shutil.disk_usage(where).free
    if needed > free:
        instead = ""
        if replicated:
            instead = " or run the hosts in namespaces (--namespaces), which read it in place"
        raise InputError(
            f"inputs.{channel}: copying it into the hosts needs {needed} bytes "
            f"({_size(needed)}) on the disk of {where}, which has {free} bytes ({_size(free)}) "
            f"free; free some space there, give the job another --root{instead}"
        )


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{count} B"
        value /= 1024
    return f"{count} B"


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


def _source(channel: str, source: Input, download_dir: Path) -> tuple[Path, bool]:
    """The channel's data on this machine, and whether it is the job's own (a download)."""
    if source.uri.startswith("s3://"):
        return _download_s3(source.uri, download_dir / channel, channel), True
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
    return root, False


def _copy_all(
    channel: str, copies: list[tuple[Path, Path]], link: bool, where: Path, replicated: bool
) -> None:
    """Every (source, target) copied, or hard-linked with ``link`` (the job's own files)."""
    if not link:
        check_space(channel, sum(allocated(path) for path, _ in copies), where, replicated)
    for path, target in copies:
        target.parent.mkdir(parents=True, exist_ok=True)
        if link:
            os.link(path, target)
        else:
            copy_file(path, target)


def stage_channels(
    inputs: Mapping[str, Input], hosts: list[EmulatedHost], download_dir: Path, in_place: bool
) -> tuple[dict[str, str], list[ChannelView]]:
    """Fill every host's channels; ``in_place``: the hosts have mount namespaces of their own,
    where a FullyReplicated channel is shown read-only as it is. Returns channel ->
    S3DistributionType, and the views the hosts make as they start."""
    distributions, views = {}, []
    for channel, source in inputs.items():
        root, own = _source(channel, source, download_dir)
        distributions[channel] = source.distribution
        files = channel_files(root)
        sharded = source.distribution == "ShardedByS3Key"
        if in_place and not sharded:
            for host in hosts:
                target = host.data_dir / channel
                if root.is_file():  # a file channel: the file in the channel's folder
                    (target / root.name).touch()  # the mount point
                seen = host.seen.data_dir / channel / (root.name if root.is_file() else "")
                views.append(ChannelView(host.index, root, seen))
            continue
        copies = [
            (path, host.data_dir / channel / relative)
            for host in hosts
            for path, relative in (files[host.index :: len(hosts)] if sharded else files)
        ]
        where = hosts[0].data_dir if hosts else download_dir
        _copy_all(channel, copies, own and sharded, where, not sharded)
    return distributions, views


__all__ = [
    "ChannelView",
    "InputError",
    "allocated",
    "channel_files",
    "check_space",
    "copy_file",
    "stage_channels",
]
