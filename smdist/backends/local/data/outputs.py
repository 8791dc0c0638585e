"""A local job's checkpoints and outputs: where they go as it starts (kept checkpoints restored
into every host, the output folder), and what it keeps when it ends, each part on its own so
one failing loses no other: its checkpoints (synced a last time), its model, its output data."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.local.data.artifacts import output_location, upload_outputs
from smdist.backends.local.data.checkpoint_store import CheckpointStore
from smdist.backends.local.data.checkpoint_sync import CheckpointSync
from smdist.backends.local.data.file_systems import shared_machine_notes
from smdist.backends.local.data.tensorboard import kept_tensorboard, prepare_tensorboard
from smdist.backends.local.preparation.files import restore_kept_checkpoints

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.reports.logs import JobLog
    from smdist.planning.plan import Plan


def place_job_data(
    plan: Plan, root: Path, name: str, fresh: bool, hosts: list[EmulatedHost], log: JobLog
) -> tuple[CheckpointStore | None, CheckpointSync | None, Path]:
    """The checkpoint store (kept checkpoints restored into every host) and its sync, where
    the spec keeps checkpoints; and the output folder. Each host's TensorBoard folder is made,
    and the log says what the hosts' file system channels do not reproduce."""
    spec = plan.spec
    store = sync = None
    if spec.checkpoint is not None and spec.checkpoint.s3_uri:
        store = CheckpointStore.claim(root / "checkpoints" / spec.name, name, fresh)
        for line in restore_kept_checkpoints(store, spec.checkpoint.s3_uri, hosts):
            log.note(f"[prepare] {line}")
        sync = CheckpointSync(store, hosts, log)
    output_dir, output_note = output_location(spec, root / "jobs", name)
    if output_note:
        log.note(f"[prepare] note: {output_note}")
    for line in [*prepare_tensorboard(spec, hosts), *shared_machine_notes(spec.inputs, hosts)]:
        log.note(f"[prepare] {line}")
    return store, sync, output_dir


def keep_outputs(
    log: JobLog,
    hosts: list[EmulatedHost],
    output_dir: Path,
    checkpoint_sync: CheckpointSync | None,
    keep_model: bool,
) -> tuple[str | None, list[str]]:
    """(the model's URI, what could not be kept: a full disk, a read-only folder, one
    sentence each, as the log says it). Where each host's TensorBoard logs are is said too."""
    began = time.monotonic()
    unkept = []
    if checkpoint_sync is not None:
        try:  # whatever the status: nothing kept is lost
            unkept += checkpoint_sync.finish()
        except OSError as error:
            unkept.append(f"the checkpoints could not be kept: {error}")
        for sentence in unkept:
            log.note(f"[upload] {sentence}")
    for line in kept_tensorboard(hosts):
        log.note(f"[upload] {line}")
    try:
        model, lost = upload_outputs(log, hosts, output_dir, keep_model=keep_model, began=began)
    except OSError as error:  # the output folder itself could not be made
        model, lost = None, [f"the output could not be written to {output_dir}: {error}"]
        log.note(f"[upload] {lost[0]}")
    return model, unkept + lost
