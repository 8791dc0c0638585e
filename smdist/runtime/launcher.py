"""Start torchrun on each SageMaker host: the pytorch_ddp strategy's ``torchrun`` launcher mode.

SageMaker starts one process per host, the entry point (``launch_torchrun.py``), with the job's
hyperparameters as ``--name value`` arguments. This module turns that into torchrun
(``python -m torch.distributed.run``'s arguments) with its rendezvous on the first host, so
restarts (``--max_restarts``) and per-GPU worker processes come from torchrun itself. torchrun
runs in the launcher's own process (``torchrun_here``): no second Python starts and imports
torch beside it.

The rendezvous follows ``max_restarts``. With restarts, every host's torchrun joins a c10d
rendezvous, the one that coordinates a restart across hosts (torchrun's ``--max_restarts`` hangs
under a static rendezvous). Without restarts there is nothing to coordinate, and a static
rendezvous (``--master_addr``/``--master_port``/``--node_rank``, what SageMaker's own
torch_distributed launcher runs) starts workers about a second sooner: the host that joins a
c10d rendezvous first polls it once a second until the others arrive.

The launcher's own settings come from the job's shipped launch and the environment, never
from the arguments: the processes per host and the instance type's EFA from the plan's resolved
launch (``smdist/launch.json`` in the code), ``SMDIST_TRAINING_SCRIPT`` (the script to run) and
``SMDIST_MAX_RESTARTS``. Run outside a job smdist planned (no launch shipped),
``SMDIST_PROCESSES_PER_HOST`` (``auto`` = one per GPU, 1 on CPU; or a number) and the EFA
adapters found on the host stand in. Every argument SageMaker gives the
launcher (the job's hyperparameters as ``--name value``) reaches the script untouched, in
order, so a script that parses its flags strictly runs as it would under plain torchrun.

On a heterogeneous cluster torchrun runs on the distribution instance groups' hosts only (the
shipped launch names the groups; their hosts come from ``resourceconfig.json``): the ranks, the
node ranks and the rendezvous host are theirs. A host of any other group runs the script once,
as a plain process with the same arguments, as SageMaker's toolkit runs it there.

On every host but the first, torchrun starts once the first host's rendezvous store answers
(torch is imported first, then the port is polled): a torchrun that gets there before the store
would back off 250-750 ms, and the job would start that much later.

The launcher waits (bounded) for every host to resolve and adds NCCL defaults on GPU hosts;
then torch's handlers own SIGTERM / SIGINT (they stop the workers) and the launcher exits with
torchrun's exit code, or 128 + the signal that stopped it (143 for SIGTERM, where a torchrun
process exits 1). Bad arguments exit 2 before anything starts. A host outside the
distribution's groups runs its script as a child, with SIGTERM / SIGINT forwarded to it.

``main`` ties the parts together and this module re-exports their names: the settings
(``launcher_args``), the command line (``torchrun_command``), torchrun in this process
(``torchrun_here``) and the child that receives forwarded signals (``signal_forwarding``).
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..contract.launch import Launch, shipped_launch
from .environments.base import ClusterEnvironmentError
from .environments.sagemaker import SageMakerEnvironment
from .hosts import HostsUnresolvedError, wait_for_hosts
from .launcher_args import (
    DEFAULT_RDZV_PORT,
    HOSTS_TIMEOUT_ENV,
    RDZV_PORT_ENV,
    LauncherArgs,
    LauncherArgumentError,
    cuda_device_count,
    gpus_per_host,
    hosts_timeout,
    read_launcher_args,
    rendezvous_port,
    resolve_processes_per_host,
    resolve_training_script,
)
from .nccl import nccl_defaults
from .settings import MAX_RESTARTS, PROCESSES_PER_HOST, TRAINING_SCRIPT
from .signal_forwarding import run_forwarding_signals
from .torchrun_command import (
    build_torchrun_command,
    installed_torch_version,
    torch_supports_local_addr,
)
from .torchrun_here import run_torchrun_here

__all__ = [
    "CONFIG_ERROR_EXIT_CODE",
    "DEFAULT_RDZV_ID",
    "DEFAULT_RDZV_PORT",
    "HOSTS_TIMEOUT_ENV",
    "HOSTS_UNRESOLVED_EXIT_CODE",
    "RDZV_PORT_ENV",
    "LauncherArgs",
    "LauncherArgumentError",
    "build_torchrun_command",
    "cuda_device_count",
    "gpus_per_host",
    "hosts_timeout",
    "installed_torch_version",
    "logger",
    "main",
    "read_launcher_args",
    "rendezvous_port",
    "resolve_processes_per_host",
    "resolve_training_script",
    "run_forwarding_signals",
    "torch_supports_local_addr",
]

SEPARATE_ROUND_STORES = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"
logger = logging.getLogger("smdist.runtime.launcher")

DEFAULT_RDZV_ID = "smdist"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the code's smdist/, where launch.json ships
CONFIG_ERROR_EXIT_CODE = 2
HOSTS_UNRESOLVED_EXIT_CODE = 1


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    search_dirs: Sequence[Path] | None = None,
) -> int:
    """Launch torchrun for this host; returns the exit code for ``sys.exit``."""
    _log_to_stderr()
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    if search_dirs is None:
        search_dirs = [Path.cwd(), Path(sys.argv[0]).resolve().parent]
    launch = shipped_launch(PACKAGE_DIR)
    try:
        args = read_launcher_args(environ, argv)
        script = resolve_training_script(args.training_script, search_dirs)
        groups = launch.distribution_groups if launch is not None else ()
        sagemaker = SageMakerEnvironment(environ, distribution_groups=groups)
        current_host = sagemaker.current_host  # raises unless it is one of the hosts
        distributes = sagemaker.in_distribution
        gpus = gpus_per_host(sagemaker)
        port = rendezvous_port(environ)
        timeout_s = hosts_timeout(environ)
    except (LauncherArgumentError, ClusterEnvironmentError) as error:
        print(f"smdist-launcher: {error}", file=sys.stderr, flush=True)
        return CONFIG_ERROR_EXIT_CODE

    if not distributes:
        return run_script_once(sagemaker, current_host, str(script), args, environ, launch)
    processes = (
        launch.processes_per_host
        if launch is not None
        else resolve_processes_per_host(args.processes_per_host, gpus)
    )
    try:
        wait_for_hosts(sagemaker.hosts, timeout_s=timeout_s)
    except HostsUnresolvedError as error:
        print(f"smdist-launcher: {error}", file=sys.stderr, flush=True)
        return HOSTS_UNRESOLVED_EXIT_CODE

    child_env = child_environment(environ, launch, gpus, args.max_restarts)
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
    return start_torchrun(command, sagemaker, current_host, port, child_env)


def _log_to_stderr() -> None:
    """smdist's lines as ``smdist-launcher: ...``; torch's, once torchrun runs in this
    process, as torchrun prints them (the root logger is left alone)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("smdist-launcher: %(message)s"))
    own = logging.getLogger("smdist")
    if not own.handlers:
        own.addHandler(handler)
    own.setLevel(logging.INFO)
    own.propagate = False


def child_environment(
    environ: Mapping[str, str], launch: Launch | None, gpus: int, max_restarts: int
) -> dict[str, str]:
    """The environment torchrun and the script get: this host's, less the launcher's own
    settings, with NCCL defaults on GPU hosts and, with restarts, a store per round."""
    # The launcher's own settings stop here; the script gets the rest of the environment.
    child_env = {
        name: value
        for name, value in environ.items()
        if name not in (TRAINING_SCRIPT, PROCESSES_PER_HOST, MAX_RESTARTS)
    }
    if gpus > 0:
        child_env.update(nccl_defaults(environ, launch))
    if max_restarts > 0:
        # torch shares one TCP store across rendezvous rounds, keys unprefixed by round: after
        # a rank dies, the restarted Gloo mesh reads the last round's addresses and fails
        # ("Connection refused"), using the restart up. A store per round recovers.
        child_env.setdefault(SEPARATE_ROUND_STORES, "1")
    return child_env


def run_script_once(
    sagemaker: SageMakerEnvironment,
    current_host: str,
    script: str,
    args: LauncherArgs,
    environ: Mapping[str, str],
    launch: Launch | None,
) -> int:
    """A host outside the distribution's instance groups: the script once, with its
    arguments, no torchrun; returns its exit code."""
    command = [sys.executable, "--", script, *args.script_args]
    logger.info(
        "host %s is not in the distribution's instance groups %s: %s (no torchrun)",
        current_host, sagemaker.distribution_groups, shlex.join(command),
    )  # fmt: skip
    return run_forwarding_signals(command, child_environment(environ, launch, 0, 0))


def start_torchrun(
    command: list[str],
    sagemaker: SageMakerEnvironment,
    current_host: str,
    port: int,
    child_env: Mapping[str, str],
) -> int:
    """Run ``command`` (a ``python -m torch.distributed.run`` line) in this process: on the
    first host at once (its store is the rendezvous), on the others once that store answers;
    returns torchrun's exit code (128 + the signal when a signal stopped it)."""
    arguments = command[3:]
    if sagemaker.node_rank() == 0:
        logger.info("host %s: %s", current_host, shlex.join(command))
        return run_torchrun_here(arguments, child_env)
    logger.info(
        "host %s: %s (once %s:%d, the first host's store, answers)",
        current_host, shlex.join(command), sagemaker.main_address, port,
    )  # fmt: skip
    return run_torchrun_here(arguments, child_env, store=(sagemaker.main_address, port))
