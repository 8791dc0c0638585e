"""Data in, artifacts out: channels, model.tar.gz, output data and persistent checkpoints.

As SageMaker does in File mode:

- each input channel's files reach every host's ``input/data/<channel>/``: all of them
  (``FullyReplicated``) or a share of them (``ShardedByS3Key``), read in place where they can
  be, copied only where they must be (``channels``); ``s3://`` prefixes are downloaded once
  with boto3 (credentials and endpoint from the usual AWS configuration);
- after the job, every host's ``model/`` becomes one ``model.tar.gz`` and every host's
  ``output/data/`` one ``output.tar.gz`` under the job's output location, merged as SageMaker
  merges them, with a note naming any file more than one host wrote.

Checkpoints have their own modules: ``checkpoint_store`` and ``checkpoint_sync``.
"""

from __future__ import annotations

import os
import tarfile
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.reports.logs import JobLog
    from smdist.spec.job import JobSpec


def file_uri_path(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.netloc + parsed.path)).expanduser()


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
