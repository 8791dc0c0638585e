"""Process-level plumbing every PyTorch entry point shares.

Progress lines, the ``env://`` rendezvous variables when the launcher (mpirun, a plain
``python``) did not set them, the collective timeout, leaving the process group in an order
gloo survives, and the exit codes a launcher reads.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from smdist.runtime.environments import detect, torch_env
from smdist.runtime.frozen_imports import freeze_imported_objects

CONFIG_ERROR_EXIT_CODE = 2
FAILURE_EXIT_CODE = 1


class ConfigurationError(ValueError):
    """A setting the job was started with cannot work; the message says which and why."""


def say(message: str) -> None:
    """One line of progress on stderr, prefixed so it is easy to find in a mixed log."""
    sys.stderr.write(f"smdist: {message}\n")  # one write: lines of several ranks stay whole
    sys.stderr.flush()


# --- rendezvous ----------------------------------------------------------------------------

RENDEZVOUS_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def ensure_rendezvous_env(environ: os._Environ[str] | dict[str, str] | None = None) -> dict:
    """Fill the ``env://`` variables torch.distributed reads, keeping any the launcher set.

    torchrun sets all of them; mpirun (SageMaker's launcher for SDDP and SMP v1) and a plain
    ``python`` set none. Returns the variables that were added.
    """
    environ = os.environ if environ is None else environ
    if all(environ.get(name) for name in RENDEZVOUS_VARIABLES):
        return {}

    added = {}
    for name, value in torch_env(detect(environ)).items():
        if not environ.get(name):
            environ[name] = str(value)
            added[name] = str(value)
    return added


def collective_timeout(seconds: int) -> Any:
    """``timeout=`` for init_process_group: None keeps the framework default (0 means that)."""
    if seconds < 0:
        raise ConfigurationError(
            f"SMDIST_COLLECTIVE_TIMEOUT={seconds} must be 0 (framework default) or a number "
            "of seconds greater than 0"
        )
    if seconds == 0:
        return None
    import datetime

    return datetime.timedelta(seconds=seconds)


_release_hooks: list[Callable[[], None]] = []


def release_before_exit(hook: Callable[[], None]) -> None:
    """Register ``hook`` to drop references to objects that hold the process group.

    Stand-ins that keep a DDP-wrapped model in module state use it, so ``leave_process_group``
    can free the model before it destroys the group.
    """
    _release_hooks.append(hook)


def leave_process_group() -> None:
    """Free what holds the process group, then leave it together with the other ranks.

    Order matters with torch 2.x on gloo: a DDP reducer still alive when the group has been
    destroyed aborts the process at interpreter exit ("terminate called without an active
    exception"), now and then. And a rank tearing down gloo while a peer is still in a
    collective can abort the peer, hence the barrier.
    """
    import torch.distributed as dist

    while _release_hooks:
        _release_hooks.pop()()
    gc.collect()
    if dist.is_available() and dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.barrier()
        dist.destroy_process_group()


# --- running a script ----------------------------------------------------------------------


def run_entry_point(main: Callable[[], int], leave_group: bool = True) -> None:
    """Run ``main`` and exit with its code; a failure exits non-zero with its reason.

    After ``main`` returns (its models are unreachable by then) the process group is left in
    order (``leave_process_group``) unless ``leave_group`` is False, for libraries that own
    their group. Configuration mistakes exit 2 with one sentence; anything else prints the
    traceback and exits 1, so the launcher (torchrun, mpirun) brings the other ranks down.
    """
    freeze_imported_objects()  # the entry point's imports are done: exit does not walk them
    try:
        code = main()
        if leave_group:
            leave_process_group()
    except ConfigurationError as error:
        say(f"configuration error: {error}")
        code = CONFIG_ERROR_EXIT_CODE
    except Exception as error:  # noqa: BLE001 - the reason must reach the log before exiting
        traceback.print_exc()
        say(f"training failed: {type(error).__name__}: {error}")
        code = FAILURE_EXIT_CODE
    sys.stdout.flush()
    sys.exit(code)
