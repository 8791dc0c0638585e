"""How the ranks of the training loop agree: one small all-reduce, at steps they all know in
advance, that carries the stop flags (SIGTERM) and the interval to the next agreement."""

from __future__ import annotations

import time
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# Ranks agree on whether to stop (SIGTERM) at steps they all know in advance: the first time
# after FIRST_AGREEMENT_STEPS steps, then every AGREEMENT_SECONDS of training as the ranks
# measure it (1 to MAX_AGREEMENT_INTERVAL steps). SageMaker allows 120 s between SIGTERM and
# SIGKILL; an agreement costs one small collective, so a few seconds apart it costs nothing.
FIRST_AGREEMENT_STEPS = 10
AGREEMENT_SECONDS = 2.0
MAX_AGREEMENT_INTERVAL = 1000

# An alias is evaluated: typing's generics, which Python 3.8 can subscript.
Answer = typing.Callable[[], typing.Tuple[float, bool]]


class RankAgreement:
    """One small all-reduce that tells every rank the same two things.

    It sums ``value`` and ``count`` over the ranks (so ``value / count`` is their mean) and ORs
    the stop flags: ranks that got SIGTERM at different steps still stop at the same step (a
    rank that stopped alone would leave its peers waiting in an all-reduce). ``begin`` starts
    it without waiting and returns a function that waits for the answer.
    """

    def __init__(self, device: torch.device) -> None:
        import torch.distributed as dist

        self.device = device
        self.distributed = dist.is_initialized() and dist.get_world_size() > 1

    def begin(self, value: Any, count: int, stop: bool) -> Answer:
        import torch

        packed = torch.tensor([float(value), float(count), float(stop)], device=self.device)
        work = None
        if self.distributed:
            import torch.distributed as dist

            work = dist.all_reduce(packed, async_op=True)

        def answer() -> tuple[float, bool]:
            if work is not None:
                work.wait()
            total, counted, stops = packed.tolist()
            return (total / counted if counted else float("nan")), stops > 0

        return answer

    def __call__(self, value: Any, count: int, stop: bool) -> tuple[float, bool]:
        return self.begin(value, count, stop)()


def _starter(agree: Any) -> Callable[[Any, int, bool], Answer]:
    """``agree.begin`` where it has one; a plain ``agree(...)`` callable answers at once."""
    begin = getattr(agree, "begin", None)
    if begin is not None:
        return begin

    def start(value: Any, count: int, stop: bool) -> Answer:
        answer = agree(value, count, stop)
        return lambda: answer

    return start


class AgreementSchedule:
    """When the ranks agree next, and the agreement still in flight.

    Each agreement carries every rank's proposal for the interval after the next one (as many
    steps as ``AGREEMENT_SECONDS`` of training took since the last agreement) and its stop flag;
    the answer is read at the following agreement, so no rank waits on a round trip.
    """

    def __init__(self, agree: Any, start_step: int) -> None:
        self._start = _starter(agree)
        self.next_step = start_step + FIRST_AGREEMENT_STEPS
        self._last = (time.perf_counter(), start_step)  # (time, step) of the last agreement
        self._pending: Answer | None = None  # the agreement started at the last one

    def due(self, step: int) -> bool:
        return step == self.next_step

    def agree(self, step: int, stop_requested: bool) -> bool:
        """Start this step's agreement; True when the previous one said some rank stops."""
        import torch

        now = time.perf_counter()
        step_seconds = (now - self._last[0]) / (step - self._last[1])
        proposal = min(
            max(int(AGREEMENT_SECONDS / max(step_seconds, 1e-9)), 1),
            MAX_AGREEMENT_INTERVAL,
        )
        interval, stopped = float(FIRST_AGREEMENT_STEPS), False
        if self._pending is not None:
            interval, stopped = self._pending()
        self._pending = self._start(torch.tensor(float(proposal)), 1, stop_requested)
        self.next_step = step + max(int(interval), 1)
        self._last = (now, step)
        return stopped

    def complete(self) -> None:
        """Wait for the agreement in flight: every rank completes the collective it started."""
        if self._pending is not None:
            self._pending()
