"""Turn SIGTERM into a flag the training loop checks between steps.

SageMaker stops a job (StopTrainingJob, spot interruption, max_run) with SIGTERM and sends
SIGKILL 120 s later. A loop that notices the flag can write a checkpoint and exit cleanly
instead of dying mid-step.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

TERMINATED_EXIT_CODE = 128 + signal.SIGTERM  # what a shell reports for a SIGTERM'd process


class StopRequest:
    """Records SIGTERM (and optionally SIGINT) instead of dying; check ``requested`` per step."""

    def __init__(self, signals: tuple[int, ...] = (signal.SIGTERM,)) -> None:
        self.requested = False
        self.signal_name: str | None = None
        for sig in signals:
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        self.signal_name = signal.Signals(signum).name
        # One write: mpirun --tag-output splits a line written in two pieces.
        sys.stderr.write(f"smdist: received {self.signal_name}; stopping after this step\n")
        sys.stderr.flush()
