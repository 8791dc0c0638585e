"""One prefix for the log lines of every backend: ``<label> | <text>``.

A local job's lines are labelled by host (``algo-1``), by host and rank where the launcher
says (``algo-2 r3``) and ``smdist`` for smdist's own notes; a SageMaker job's CloudWatch lines
by the host whose stream they come from. Both print them the same way, the label padded to the
job's widest so the text starts in one column on a terminal and stays easy to grep in a CI log
(``^algo-2 ``), as ``docker compose`` prints its services.
"""

from __future__ import annotations

SEPARATOR = " | "


def prefixed(label: str, text: str, width: int = 0) -> str:
    """``text`` as a log line of ``label``, the label padded to ``width``."""
    return f"{label.ljust(width)}{SEPARATOR}{text}"


def split_prefixed(line: str) -> tuple[str, str] | None:
    """(label, text) of a prefixed line; None for a line without a prefix."""
    label, separator, text = line.partition(SEPARATOR)
    return (label.rstrip(), text) if separator else None
