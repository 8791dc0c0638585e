"""A progress bar for the code's upload to S3, on stderr when it is a terminal, else nothing.

A large ``source_dir`` can take minutes to upload; a bar says it moves and how far it has come.
A CI log or a notebook gets no bar (``submit`` says what was uploaded once it is done); the
bar is gone from the terminal when the upload ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

BytesSent = Callable[[int], None]  # boto3's transfer Callback: the bytes sent since last call


@contextlib.contextmanager
def upload_bar(total: int, label: str) -> Iterator[BytesSent | None]:
    """Yields the callback that advances a bar of ``total`` bytes; None where stderr is no
    terminal (then nothing is drawn)."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal or console.is_dumb_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda sent: progress.update(task, advance=sent)  # from boto3's threads: locked
