"""``smdist jobs``: the jobs a backend keeps a record of (default: those under ``--root``),
newest first, as a table or JSON (the rows are ``smdist.backends.job_rows.Row``s).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Any

import typer


def _when(started: float | None) -> str:
    return "-" if started is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def table(found: list[Any]) -> list[str]:
    """Aligned columns, the status next to last (an unreadable record's reason is long: it
    widens no column), then a study's trials."""
    head = ("NAME", "KIND", "STARTED", "DURATION", "STATUS", "TRIALS")
    cells = [head] + [
        (r.name, r.kind, _when(r.started), _duration(r.duration), r.status, r.trials) for r in found
    ]
    readable = [line for line in cells if not line[4].startswith("unreadable")]
    widths = [max(len(line[i]) for line in readable) for i in range(len(head) - 1)]
    lines = []
    for line in cells:
        padded = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)]
        lines.append("  ".join([*padded, line[-1]]).rstrip())
    return lines


def list_jobs(found: list[Any], where: str, as_json: bool) -> int:
    if as_json:
        typer.echo(json.dumps([asdict(row) for row in found], indent=2))
    elif not found:
        typer.echo(f"no {where} (`smdist run FILE` starts one)")
    else:
        typer.echo("\n".join(table(found)))
    return 0
