"""The torchrun command line for one host (static or c10d rendezvous), whether the installed
torch takes ``--local_addr``, and the line that starts torchrun once the first host's store
answers (for the hosts of SageMaker's torch_distributed launcher, which the local backend
starts)."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path


def installed_torch_version() -> str | None:
    """torch's version without importing torch or ``importlib.metadata`` (each costs a start).

    Reads ``torch/version.py``, which every torch build writes; falls back to the package
    metadata when that file is missing.
    """
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        try:
            text = (Path(location) / "version.py").read_text()
        except OSError:
            continue
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        if match:
            return match.group(1)
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def torch_supports_local_addr() -> bool:
    """torchrun's --local_addr arrived in torch 2.1; older containers must not be given it."""
    version = installed_torch_version()
    if version is None:
        return False
    parts = version.split("+")[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return False
    return (major, minor) >= (2, 1)


def build_torchrun_command(
    *,
    python: str,
    num_hosts: int,
    processes_per_host: int,
    node_rank: int,
    rdzv_host: str,
    rdzv_port: int,
    rdzv_id: str,
    max_restarts: int,
    script: str,
    script_args: Sequence[str],
    local_addr: str | None = None,
) -> list[str]:
    """The torchrun command line for one host; pure, so what runs is what was checked.

    ``max_restarts`` 0 gives a static rendezvous: node ranks are the hosts' positions in
    SM_HOSTS and the first host serves the store on ``rdzv_port``. Otherwise a c10d rendezvous
    on the first host, which hosts the store (``is_host`` is explicit rather than guessed from
    host names, which fails when several emulated hosts share one machine). With c10d, torchrun
    ignores ``--node_rank`` and numbers the nodes in the sorted order of their local addresses:
    given the SageMaker host names ``algo-1`` sorts first, so global rank 0 is always on the
    first host, but other hosts' node ranks may differ from their position in SM_HOSTS
    (``algo-10`` sorts before ``algo-2``).

    ``local_addr`` makes the workers' MASTER_ADDR the host's announced name instead of whatever
    its FQDN resolves to.
    """
    command = [
        python,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        str(num_hosts),
        "--nproc_per_node",
        str(processes_per_host),
        "--node_rank",
        str(node_rank),
    ]
    if max_restarts == 0:
        command += ["--master_addr", rdzv_host, "--master_port", str(rdzv_port)]
    else:
        command += [
            "--rdzv_backend",
            "c10d",
            "--rdzv_endpoint",
            f"{rdzv_host}:{rdzv_port}",
            "--rdzv_id",
            rdzv_id,
            "--rdzv_conf",
            f"is_host={'true' if node_rank == 0 else 'false'}",
            "--max_restarts",
            str(max_restarts),
        ]
    if local_addr:
        command += ["--local_addr", local_addr]
    return [*command, script, *script_args]


WHEN_READY = Path(__file__).with_name("torchrun_when_ready.py")
STORE_WAIT_SECONDS = 60.0  # past this, torch's own connect retries take over


def when_ready_prefix(
    python: str,
    host: str,
    port: int,
    helper: Path = WHEN_READY,
    seconds: float = STORE_WAIT_SECONDS,
) -> list[str]:
    """What comes before torchrun's arguments to start it through ``helper`` (a host's copy of
    ``torchrun_when_ready.py``) once ``host:port``, the first host's store, answers."""
    return [python, str(helper), host, str(port), f"{seconds:g}", "--"]
