"""A job's TensorBoard logs (``tensorboard:``), kept in its folder.

On SageMaker each host's ``tensorboard.local_path`` (``/opt/ml/output/tensorboard`` unless the
job says otherwise) is uploaded to ``tensorboard.s3_uri`` while the job runs, and the path is
written to ``/opt/ml/input/config/tensorboardoutputconfig.json`` as ``{"LocalPath": ...}``
(where SageMaker Debugger's ``smdebug`` reads it: ``DEFAULT_SAGEMAKER_TENSORBOARD_PATH``).

Here each host's folder is the path: under ``/opt/ml`` it is in the host's folder of the job
(``hosts/<host>/output/tensorboard``), one per host, where it stays and can be followed while
the job runs; the job's closing lines say where. Hosts in namespaces of their own see it at the
path itself; hosts sharing this machine's files see a script's literal ``/opt/ml/...`` as this
machine's, so their config file names the host's folder instead (as their ``SM_*`` variables
do). A ``local_path`` outside ``/opt/ml`` is this machine's own path on every host: written
there, not kept.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.spec.job import JobSpec

CONFIG_FILE = "tensorboardoutputconfig.json"
CONTAINER_BASE = PurePosixPath("/opt/ml")


def _below_opt_ml(local_path: str) -> PurePosixPath | None:
    try:
        return PurePosixPath(local_path).relative_to(CONTAINER_BASE)
    except ValueError:
        return None


def prepare_tensorboard(spec: JobSpec, hosts: list[EmulatedHost]) -> list[str]:
    """Each host's TensorBoard folder made and named in its config file; the log's lines."""
    board = spec.tensorboard
    if board is None or not hosts:
        return []
    relative = _below_opt_ml(board.local_path)
    for host in hosts:
        seen = board.local_path
        if relative is not None:
            (host.base / relative).mkdir(parents=True, exist_ok=True)
            seen = str(host.seen.base / relative)
        (host.config_dir / CONFIG_FILE).write_text(json.dumps({"LocalPath": seen}, indent=1))
    if relative is None:
        return [
            f"note: tensorboard.local_path {board.local_path} is outside /opt/ml: every host "
            "writes this machine's own path, which is not kept with the job"
        ]
    uploaded = board.s3_uri or "s3://<bucket>/<job>/tensorboard"
    where = hosts[0].base.parent / "<host>" / relative
    lines = [
        f"TensorBoard: each host's {board.local_path} is kept in {where} (SageMaker uploads "
        f"it to {uploaded} while the job runs)"
    ]
    if hosts[0].inside is None:
        lines.append(
            f"note: hosts sharing this machine's files see a literal {board.local_path} as "
            f"this machine's: a script finds its host's folder as LocalPath in "
            f"$SM_INPUT_CONFIG_DIR/{CONFIG_FILE}"
        )
    return lines


def _host_folder(host: EmulatedHost) -> Path | None:
    """The host's TensorBoard folder on this machine, from its config file; None where the
    job has none, or its path is not the host's own."""
    try:
        local_path = json.loads((host.config_dir / CONFIG_FILE).read_text())["LocalPath"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        relative = PurePosixPath(local_path).relative_to(PurePosixPath(host.seen.base))
    except ValueError:
        return None
    return host.base / relative


def kept_tensorboard(hosts: list[EmulatedHost]) -> list[str]:
    """The closing lines: where each host's TensorBoard logs are, and how to view them."""
    folders = [(host.name, _host_folder(host)) for host in hosts]
    kept = [(name, folder) for name, folder in folders if folder is not None]
    if not kept:
        return []
    written = [
        (name, folder)
        for name, folder in kept
        if folder.is_dir() and any(path.is_file() for path in folder.rglob("*"))
    ]
    if not written:
        return [f"TensorBoard: no host wrote to its folder ({kept[0][1]}, ...)"]
    places = ", ".join(f"{name} {folder}" for name, folder in written)
    if len(written) == 1:
        view = f"tensorboard --logdir {written[0][1]}"
    else:
        view = "tensorboard --logdir_spec " + ",".join(f"{n}:{f}" for n, f in written)
    return [f"TensorBoard logs of {places}", f"TensorBoard: view them with {view}"]


__all__ = ["CONFIG_FILE", "kept_tensorboard", "prepare_tensorboard"]
