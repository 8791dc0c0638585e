"""Execute a strategy notebook against the local backend and scrub what a run leaves in it.

Shared by ``build_notebooks.py --execute`` (which stores the notebooks executed, each in a kernel
of its own) and the test that runs them fresh (one kernel for all, ``execute_each``), so both
execute the same way: streams coalesced, no timing metadata, the job directory under the
notebook's working directory. Scrubbing replaces the values that differ
on every run or machine (that directory, the job name's time-and-random suffix, the code
bundle's digest) with fixed placeholders, so a stored notebook names no machine path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat

# Unset while executing: the notebooks must show the offline path (dry run, no submission).
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "SMDIST_ROLE",
    "SMDIST_BUCKET",
)


def _client(notebook: nbformat.NotebookNode, workdir: Path) -> Any:
    import nbclient

    return nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
        coalesce_streams=True,
        record_timing=False,
    )


def execute(notebook: nbformat.NotebookNode, workdir: Path) -> nbformat.NotebookNode:
    """Run ``notebook`` in place with ``workdir`` as its directory (jobs land there).

    The caller unsets AWS_VARIABLES first. Streams are coalesced so that one cell's prints are
    one output however the kernel flushed them; no timing metadata is recorded.
    """
    _client(notebook, workdir).execute()
    return notebook


def execute_each(
    runs: Sequence[tuple[nbformat.NotebookNode, Path]],
) -> list[BaseException | None]:
    """Run each notebook in place, in turn, as ``execute`` does, but all in one kernel; returns
    what each raised (None when every cell ran), so that one failure spares the others.

    Before each notebook the kernel's namespace is emptied (``%reset -f``) and it moves to the
    notebook's directory: every notebook runs from nothing of the ones before, but finds their
    modules imported. That is the point: a kernel of its own would import smdist, matplotlib
    and the SageMaker SDK again (over 10 s of CPU for the SDK alone) for every notebook.
    """
    if not runs:
        return []
    client = _client(*runs[0])
    raised: list[BaseException | None] = []
    with client.setup_kernel():
        for notebook, workdir in runs:
            client.nb = notebook
            client.reset_execution_trackers()
            try:
                _start_afresh(client, workdir)
                for index, cell in enumerate(notebook.cells):
                    client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            except Exception as error:  # the notebook's failure, for its own test to raise
                raised.append(error)
            else:
                raised.append(None)
    return raised


def _start_afresh(client: Any, workdir: Path) -> None:
    """Empty the kernel's namespace and move it to ``workdir`` (a silent cell of no notebook)."""
    code = f"%reset -f\nimport os\nos.chdir({str(workdir)!r})\ndel os"
    reply = client.wait_for_reply(client.kc.execute(code, silent=True, store_history=False))
    if reply is None or reply["content"]["status"] != "ok":
        raise RuntimeError(f"the kernel could not start a notebook afresh: {reply}")


# Values that differ on every run or machine, and what the stored notebook shows instead.
JOB_SUFFIX = re.compile(r"-\d{6}-\d{6}-[0-9a-z]{4}\b")
DIGEST = re.compile(r"\b[0-9a-f]{64}\b")


def _scrub_text(text: str, workdir: Path) -> str:
    for path in {str(workdir), str(workdir.resolve())}:
        text = text.replace(path, ".")
    if len(Path.home().parts) > 1:  # a home of "/" would turn every path into "~"
        text = text.replace(str(Path.home()), "~")
    text = JOB_SUFFIX.sub("-YYMMDD-HHMMSS-xxxx", text)
    return DIGEST.sub("<content-hash>", text)


def scrub(notebook: nbformat.NotebookNode, workdir: Path) -> nbformat.NotebookNode:
    """Replace run-specific values (job directory, job-name suffix, code digest) in outputs."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = _scrub_text(output["text"], workdir)
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/") and isinstance(value, str):
                    output["data"][mime] = _scrub_text(value, workdir)
            if "traceback" in output:
                output["traceback"] = [_scrub_text(t, workdir) for t in output["traceback"]]
    # The kernel's exact Python version is this machine's, not the notebook's.
    notebook.metadata.get("language_info", {}).pop("version", None)
    return notebook
