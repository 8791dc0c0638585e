"""The thread a local job runs in: the hosts' processes are started from it, and their lives
are tied to it (their parent-death signal follows the thread that forked them).

It may start during preparation (``start_early``): it then makes the hosts' network while the
code is copied, and waits for ``go`` to run the job, or for ``cancel`` to end without running
anything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class JobThread:
    def __init__(self, name: str, run: Callable[[], None]) -> None:
        self._name, self._run = name, run
        self._thread: threading.Thread | None = None
        self._go: threading.Event | None = None  # set: the thread started early may run
        self._cancelled = False

    def _new(self, target: Callable[[], None]) -> threading.Thread:
        # Non-daemon: a script that launches without waiting still sees its job through.
        return threading.Thread(target=target, name=f"smdist-{self._name}")

    def start_early(self, meanwhile: Callable[[], None]) -> None:
        """Start now: ``meanwhile()``, then wait for ``go`` or ``cancel``."""
        self._go = go = threading.Event()

        def early() -> None:
            meanwhile()
            go.wait()
            if not self._cancelled:
                self._run()

        self._thread = self._new(early)
        self._thread.start()

    def go(self) -> None:
        """Run the job: now, or in the thread started early."""
        if self._go is not None:
            self._go.set()
            return
        self._thread = self._new(self._run)
        self._thread.start()

    def cancel(self) -> None:
        """Preparation failed: the thread started early ends without running anything."""
        if self._go is not None and self._thread is not None:
            self._cancelled = True
            self._go.set()
            self._thread.join()
