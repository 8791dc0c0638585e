"""torchrun in the launcher's own process: what ``python -m torch.distributed.run`` does,
without a second Python starting beside the launcher.

The launcher's process becomes torchrun. Its environment becomes the one torchrun and the
script get; on a host other than the first, torch is imported first and torchrun starts once
the first host's store answers (see ``torchrun_when_ready``). From then on torch's own handlers
own SIGTERM and SIGINT: they stop the workers and raise ``SignalException``, printed as a
torchrun process prints it as it ends, which reads here as 128 + the signal (143 for SIGTERM, a
stopped job, where torchrun's process exits 1). A failed worker gives torchrun's failure report,
as torchrun prints it, and exit code 1. Until torch's handlers are installed (the import, the
rendezvous), SIGTERM and SIGINT end the process at once, as they end a torchrun that has started
no worker yet.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Mapping, Sequence

from .frozen_imports import freeze_imported_objects
from .torchrun_when_ready import wait_for_port


def run_torchrun_here(
    arguments: Sequence[str],
    env: Mapping[str, str],
    store: tuple[str, int] | None = None,
    store_wait: float = 60.0,
) -> int:
    """Run torchrun with ``arguments`` (what follows ``python -m torch.distributed.run``) in
    this process, in ``env``; with ``store`` (host, port), once that store answers (at most
    ``store_wait`` seconds: past that, torch's own connect retries take over). Returns the exit
    code the process would have had."""
    os.environ.clear()
    os.environ.update(env)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    try:  # the import is most of torchrun's start
        from torch.distributed.elastic.multiprocessing.api import SignalException
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
        from torch.distributed.run import main as torchrun
    except ImportError as error:
        print(f"smdist-launcher: torchrun needs torch in {sys.executable}: {error}", flush=True)
        return 1
    freeze_imported_objects()  # torch's objects live until exit: it need not walk them
    if store is not None:
        wait_for_port(*store, store_wait)
    argv, sys.argv = sys.argv, ["torchrun", *arguments]  # what torchrun's messages name
    try:
        torchrun(list(arguments))
    except SignalException as stop:
        traceback.print_exc()  # what a torchrun process prints as it ends on the signal
        return 128 + int(stop.sigval)
    except ChildFailedError:
        traceback.print_exc()  # torchrun's table of the failed workers, as python prints it
        return 1
    except SystemExit as exit_:  # torchrun's own argument errors
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.argv = argv
        sys.stdout.flush()
        sys.stderr.flush()
    return 0
