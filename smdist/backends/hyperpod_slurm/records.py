"""What this machine keeps of each job it submitted: ``<root>/hyperpod-slurm/<job>.json``.

A record says where the job is (the head node, the job folder, the Slurm job id), so that
``smdist status``, ``logs``, ``stop`` and ``jobs`` find it again by name; what the job does is
read from Slurm and from its folder each time. The records sit beside the local backends'
``<root>/jobs/`` and never among them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smdist.backends.safe_files import write_text_atomically

RECORDS = "hyperpod-slurm"
SUFFIX = ".json"


def record_path(root: Path, name: str) -> Path:
    return Path(root) / RECORDS / f"{name}{SUFFIX}"


def write_record(root: Path, record: dict[str, Any]) -> Path:
    path = record_path(root, str(record["name"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def read_record(root: Path, name: str) -> dict[str, Any] | None:
    """The record of job ``name``; None when this machine has none (or it cannot be read)."""
    if "/" in name or name.startswith("."):
        return None
    try:
        record = json.loads(record_path(root, name).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("slurm_job_id") else None


def names(root: Path) -> list[str]:
    """The jobs recorded under ``root``, newest first."""
    records = []
    for path in (Path(root) / RECORDS).glob(f"*{SUFFIX}"):
        record = read_record(root, path.name[: -len(SUFFIX)])
        if record is not None:
            records.append((float(record.get("submitted") or 0), str(record["name"])))
    return [name for _, name in sorted(records, reverse=True)]
