"""How a process ended: an exit code, or the signal that killed it (``Ending``), read from the
statuses launchers and the emulated hosts' init processes report."""

from __future__ import annotations

import signal
from dataclasses import dataclass

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True)
class Ending:
    """How a process ended: an exit code, or the signal that killed it."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def of_status(cls, status: int) -> Ending:
        """A status as torchrun and Popen report it: negative for a signal."""
        return cls(signal=-status) if status < 0 else cls(code=status)

    @classmethod
    def of_host_exit(cls, code: int) -> Ending:
        """A host's exit code from its init process, which reports signal N as 128 + N."""
        if code < 0:
            return cls(signal=-code)
        if code > 128 and code - 128 in set(signal.valid_signals()):
            return cls(signal=code - 128)
        return cls(code=code)

    @property
    def stopped(self) -> bool:
        return self.signal in STOP_SIGNALS

    def __str__(self) -> str:
        if self.signal is not None:
            return f"killed by {signal_name(self.signal)}"
        return f"exit code {self.code}"
