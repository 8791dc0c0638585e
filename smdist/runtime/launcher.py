"""Start torchrun on each SageMaker host: the pytorch_ddp strategy's ``torchrun`` launcher mode.

SageMaker starts one process per host, the entry point (``launch_torchrun.py``), with the job's
hyperparameters as ``--name value`` arguments. This module turns that into
``python -m torch.distributed.run`` with its rendezvous on the first host, so restarts
(``--max_restarts``) and per-GPU worker processes come from torchrun itself.

The rendezvous follows ``max_restarts``. With restarts, every host's torchrun joins a c10d
rendezvous, the one that coordinates a restart across hosts (torchrun's ``--max_restarts`` hangs
under a static rendezvous). Without restarts there is nothing to coordinate, and a static
rendezvous (``--master_addr``/``--master_port``/``--node_rank``, what SageMaker's own
torch_distributed launcher runs) starts workers about a second sooner: the host that joins a
c10d rendezvous first polls it once a second until the others arrive.

The launcher's own settings come from the environment, never from the arguments:
``SMDIST_TRAINING_SCRIPT`` (the script to run), ``SMDIST_PROCESSES_PER_HOST`` (``auto`` = one
per GPU, 1 on CPU; or a number) and ``SMDIST_MAX_RESTARTS``. Every argument SageMaker gives the
launcher (the job's hyperparameters as ``--name value``) reaches the script untouched, in
order, so a script that parses its flags strictly runs as it would under plain torchrun.

The launcher waits (bounded) for every host to resolve, adds NCCL defaults on GPU hosts,
forwards SIGTERM / SIGINT to torchrun (which then stops its workers; SIGKILL would orphan
them) and exits with torchrun's exit code, or 143 when a SIGTERM stopped it (torchrun itself
exits 1 then). Bad arguments exit 2 before anything starts.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from .environments.base import ClusterEnvironmentError
from .environments.sagemaker import SageMakerEnvironment
from .hosts import DEFAULT_TIMEOUT_S, HostsUnresolvedError, wait_for_hosts
from .nccl import nccl_defaults
from .settings import MAX_RESTARTS, PROCESSES_PER_HOST, TRAINING_SCRIPT, SettingsError
from .settings import whole_number as _whole_number

logger = logging.getLogger("smdist.runtime.launcher")

RDZV_PORT_ENV = "SMDIST_RDZV_PORT"
HOSTS_TIMEOUT_ENV = "SMDIST_HOSTS_TIMEOUT_S"
DEFAULT_RDZV_PORT = 29400  # torchrun's own default for c10d; used for static as well
DEFAULT_RDZV_ID = "smdist"
CONFIG_ERROR_EXIT_CODE = 2
HOSTS_UNRESOLVED_EXIT_CODE = 1


class LauncherArgumentError(ValueError):
    """A launcher argument or variable is missing or malformed; the launcher exits 2."""


@dataclass(frozen=True)
class LauncherArgs:
    training_script: str
    processes_per_host: int | None  # None: "auto"
    max_restarts: int = 0
    script_args: list[str] = field(default_factory=list)


def _parse_processes_per_host(value: str) -> int | None:
    text = value.strip()
    if text.lower() in ("", "auto"):
        return None
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise LauncherArgumentError(
        f"{PROCESSES_PER_HOST}={value!r} is not valid: expected 'auto' (one process per GPU, "
        "1 on CPU) or a whole number >= 1."
    )


def read_launcher_args(environ: Mapping[str, str], argv: Sequence[str]) -> LauncherArgs:
    """The launcher's settings from ``SMDIST_*`` variables; ``argv`` is the script's, as is."""
    script = environ.get(TRAINING_SCRIPT, "").strip()
    if not script:
        raise LauncherArgumentError(
            f"{TRAINING_SCRIPT} is not set: it names the training script the launcher starts, "
            "e.g. train.py."
        )
    try:
        max_restarts = _whole_number(environ, MAX_RESTARTS, 0)
    except SettingsError as error:
        raise LauncherArgumentError(str(error)) from None
    return LauncherArgs(
        training_script=script,
        processes_per_host=_parse_processes_per_host(environ.get(PROCESSES_PER_HOST, "auto")),
        max_restarts=max_restarts,
        script_args=list(argv),
    )


def cuda_device_count() -> int:
    """GPUs torch can see; 0 when torch is not installed."""
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count())


def gpus_per_host(
    sagemaker: SageMakerEnvironment, count_devices: Callable[[], int] = cuda_device_count
) -> int:
    """SM_NUM_GPUS when SageMaker announces it, else what the driver reports."""
    announced = sagemaker.announced_gpus()
    return count_devices() if announced is None else announced


def resolve_processes_per_host(requested: int | None, gpus: int) -> int:
    """``auto`` (None) is one process per GPU, 1 on a CPU host; a number is used as given."""
    if requested is not None:
        return requested
    return gpus if gpus > 0 else 1


def rendezvous_port(environ: Mapping[str, str]) -> int:
    """SMDIST_RDZV_PORT, else MASTER_PORT, else 29400."""
    for variable in (RDZV_PORT_ENV, "MASTER_PORT"):
        raw = environ.get(variable, "").strip()
        if raw:
            if raw.isdigit() and 1 <= int(raw) <= 65535:
                return int(raw)
            raise LauncherArgumentError(
                f"{variable}={raw!r} is not valid: expected a TCP port number between 1 and 65535."
            )
    return DEFAULT_RDZV_PORT


def hosts_timeout(environ: Mapping[str, str]) -> float:
    raw = environ.get(HOSTS_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise LauncherArgumentError(
            f"{HOSTS_TIMEOUT_ENV}={raw!r} is not valid: expected seconds, a number >= 0."
        )
    return value


def resolve_training_script(script: str, search_dirs: Sequence[Path]) -> Path:
    """The script as an absolute path: as given when absolute, else the first dir holding it."""
    path = Path(script)
    candidates = [path] if path.is_absolute() else [Path(d) / path for d in search_dirs]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    searched = ", ".join(str(c) for c in candidates)
    raise LauncherArgumentError(
        f"{TRAINING_SCRIPT}={script!r} was not found (looked for {searched}): expected a "
        "script in the uploaded source directory."
    )


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


def _terminate_with_parent() -> None:
    """In the child: get SIGTERM if the launcher dies, so torchrun cannot be orphaned."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def run_forwarding_signals(command: Sequence[str], env: Mapping[str, str]) -> int:
    """Run ``command``, passing SIGTERM / SIGINT on to it; return its exit code.

    A child killed by signal N reports 128 + N, as a shell would. When the child was stopped
    by a forwarded signal and exits non-zero, the result is 128 + that signal (143 for
    SIGTERM), not torchrun's generic 1: callers tell a stopped job from a failed one by it.
    """
    child: subprocess.Popen[bytes] | None = None
    early: list[int] = []
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if child is None:
            early.append(signum)
        elif child.poll() is None:
            logger.info(
                "forwarding %s to torchrun (pid %d)", signal.Signals(signum).name, child.pid
            )
            child.send_signal(signum)

    forwarded = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, forward) for sig in forwarded}
    try:
        # setsid: a terminal's Ctrl-C reaches torchrun once, forwarded by this process.
        child = subprocess.Popen(
            list(command),
            env=dict(env),
            start_new_session=True,
            preexec_fn=_terminate_with_parent if sys.platform.startswith("linux") else None,
        )
        for signum in early:
            child.send_signal(signum)
        returncode = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if returncode != 0 and received:
        return 128 + received[0]
    return returncode if returncode >= 0 else 128 - returncode


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    search_dirs: Sequence[Path] | None = None,
) -> int:
    """Launch torchrun for this host; returns the exit code for ``sys.exit``."""
    logging.basicConfig(level=logging.INFO, format="smdist-launcher: %(message)s")
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    if search_dirs is None:
        search_dirs = [Path.cwd(), Path(sys.argv[0]).resolve().parent]
    try:
        args = read_launcher_args(environ, argv)
        script = resolve_training_script(args.training_script, search_dirs)
        sagemaker = SageMakerEnvironment(environ)
        current_host = sagemaker.current_host  # raises unless it is one of the hosts
        gpus = gpus_per_host(sagemaker)
        port = rendezvous_port(environ)
        timeout_s = hosts_timeout(environ)
    except (LauncherArgumentError, ClusterEnvironmentError) as error:
        print(f"smdist-launcher: {error}", file=sys.stderr, flush=True)
        return CONFIG_ERROR_EXIT_CODE

    processes = resolve_processes_per_host(args.processes_per_host, gpus)
    try:
        wait_for_hosts(sagemaker.hosts, timeout_s=timeout_s)
    except HostsUnresolvedError as error:
        print(f"smdist-launcher: {error}", file=sys.stderr, flush=True)
        return HOSTS_UNRESOLVED_EXIT_CODE

    # The launcher's own settings stop here; the script gets the rest of the environment.
    child_env = {
        name: value
        for name, value in environ.items()
        if name not in (TRAINING_SCRIPT, PROCESSES_PER_HOST, MAX_RESTARTS)
    }
    if gpus > 0:
        child_env.update(nccl_defaults(environ))
    command = build_torchrun_command(
        python=sys.executable,
        num_hosts=sagemaker.world_size(),
        processes_per_host=processes,
        node_rank=sagemaker.node_rank(),
        rdzv_host=sagemaker.main_address,
        rdzv_port=port,
        rdzv_id=sagemaker.job_name or DEFAULT_RDZV_ID,
        max_restarts=args.max_restarts,
        script=str(script),
        script_args=args.script_args,
        local_addr=current_host if torch_supports_local_addr() else None,
    )
    logger.info("host %s: %s", current_host, shlex.join(command))
    return run_forwarding_signals(command, child_env)
