"""What the training loop reports as it goes: the loss window behind each metric line, and the
checkpoints it has written with the lines that announce them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from smdist.runtime.torch_training.process import say


class LossWindow:
    """The loss of the steps since the last metric line, kept where it is cheapest.

    A CPU loss is read at once (free on a CPU); a GPU loss is summed on the device and read
    only when the line is printed, so ordinary steps never wait for the GPU.
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.steps = 0
        self.cpu_sum = 0.0
        self.device_sum: Any = None

    def add(self, loss: Any) -> None:
        self.steps += 1
        if loss.is_cpu:
            self.cpu_sum += loss.item()
        else:
            loss = loss.detach()
            self.device_sum = loss if self.device_sum is None else self.device_sum + loss

    def mean(self) -> float:
        total = self.cpu_sum + (float(self.device_sum) if self.device_sum is not None else 0.0)
        return total / self.steps if self.steps else float("nan")


class CheckpointWriter:
    """Calls ``checkpoint(step)`` (on every rank, at the same steps) and announces the file it
    returns: the first checkpoint of every epoch but the last, and the last one; every one
    when ``announce_every`` (the job chose ``checkpoint_every`` itself)."""

    def __init__(
        self,
        checkpoint: Callable[[int], Any],
        *,
        checkpoint_every: int,
        announce_every: bool,
        epoch_of: Callable[[int], int],
        final_epoch: int,
        start_step: int,
    ) -> None:
        self._checkpoint = checkpoint
        self._checkpoint_every = checkpoint_every
        self._announce_every = announce_every
        self._epoch_of = epoch_of
        self._final_epoch = final_epoch
        self._announced_epoch = 0  # the epoch of the last checkpoint line
        self.last_saved = start_step  # the step of the newest state on disk

    def save(self, at_step: int, last: bool) -> None:
        written = self._checkpoint(at_step)
        self.last_saved = at_step
        epoch = self._epoch_of(at_step)
        # A line for the first checkpoint of every epoch but the last, and for the last one.
        first_of_epoch = epoch != self._announced_epoch and epoch != self._final_epoch
        if written is None or not (last or first_of_epoch or self._announce_every):
            return
        how_often = ""
        if self._announced_epoch == 0 and not (last or self._announce_every):
            how_often = (
                f" (saved every {self._checkpoint_every} steps, shown once per epoch; "
                "set checkpoint_every to see each)"
            )
        self._announced_epoch = epoch
        say(f"checkpoint step={at_step} written to {written}{how_often}")
