"""The training loop: metric lines, periodic checkpoints and a SIGTERM-safe stop, with no
host-device synchronisation on ordinary steps.

Checkpoints are written every ``checkpoint_every`` steps and once more at the end; a line says
so at most once per epoch (every time when the job chose ``checkpoint_every`` itself) and for
the last one, so a short run is not buried in them. A run resumed from a checkpoint that is
already at the end trains nothing and says so in one line instead of reporting steps it did not
run.

The agreement between ranks lives in ``agreement``, the loss window and the checkpoint lines in
``progress``; this module re-exports the agreement's names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smdist.runtime.checkpoints import nothing_left_to_train
from smdist.runtime.metrics import log_metrics
from smdist.runtime.paths import checkpoint_dir, model_dir
from smdist.runtime.stop import TERMINATED_EXIT_CODE, StopRequest
from smdist.runtime.torch_training.agreement import (
    AGREEMENT_SECONDS,
    FIRST_AGREEMENT_STEPS,
    MAX_AGREEMENT_INTERVAL,
    AgreementSchedule,
    Answer,
    RankAgreement,
)
from smdist.runtime.torch_training.process import ConfigurationError, say
from smdist.runtime.torch_training.progress import CheckpointWriter, LossWindow
from smdist.runtime.torch_training.weights import report_checksum, save_weights

if TYPE_CHECKING:
    import torch

    from smdist.runtime.torch_training.data import ShardedBatches

__all__ = [
    "AGREEMENT_SECONDS",
    "FIRST_AGREEMENT_STEPS",
    "MAX_AGREEMENT_INTERVAL",
    "Answer",
    "LoopResult",
    "LoopSettings",
    "RankAgreement",
    "exit_code",
    "final_report",
    "finish",
    "run_training",
]


@dataclass(frozen=True)
class LoopSettings:
    epochs: int
    max_steps: int  # 0: stop after ``epochs``
    log_every: int
    checkpoint_every: int  # 0: no periodic checkpoints and none at the end
    global_batch: int  # samples per optimizer step, summed over ranks
    # False: a line for the first checkpoint of an epoch and the last one only.
    announce_every_checkpoint: bool = False

    @classmethod
    def from_args(cls, args: Any, replicas: int) -> LoopSettings:
        """The loop's settings from the common hyperparameters, for ``replicas`` data replicas."""
        return cls(
            epochs=args.epochs,
            max_steps=args.max_steps,
            log_every=args.log_every,
            checkpoint_every=args.checkpoint_every,
            global_batch=args.batch_size * replicas,
            announce_every_checkpoint="checkpoint_every" in getattr(args, "given", ()),
        )

    def __post_init__(self) -> None:
        for name in ("epochs", "max_steps", "checkpoint_every"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name}={getattr(self, name)} must not be negative")
        if self.log_every <= 0:
            raise ConfigurationError(f"log_every={self.log_every} must be greater than 0")


@dataclass
class LoopResult:
    step: int  # optimizer steps taken, counting those before a resume
    epoch: int  # 1-based epoch of the last step
    loss: float  # mean loss of the last logged window
    samples_per_sec: float  # over this run, first step (warm-up) excluded
    stopped: bool  # True when SIGTERM ended the run
    trained: int = 0  # optimizer steps this run took (0: a checkpoint had nothing left)


def _batches(loader: Any, skip: int) -> Iterator:
    iterator = iter(loader)
    for _ in range(skip):
        next(iterator)
    return iterator


@dataclass(frozen=True)
class _Span:
    """The steps this run may take: ``steps_per_epoch`` per epoch, up to ``last_step``."""

    steps_per_epoch: int
    last_step: int

    @classmethod
    def of(cls, settings: LoopSettings, steps_per_epoch: int) -> _Span:
        last_step = settings.epochs * steps_per_epoch
        if settings.max_steps:
            last_step = min(last_step, settings.max_steps)
        return cls(steps_per_epoch, last_step)

    def epoch_of(self, at_step: int) -> int:
        """The 1-based epoch the step belongs to."""
        return (max(at_step, 1) - 1) // self.steps_per_epoch + 1


class _Run:
    """The loop's state as it trains, and what it does after each step."""

    def __init__(
        self,
        settings: LoopSettings,
        span: _Span,
        checkpoints: CheckpointWriter,
        agreements: AgreementSchedule,
        is_main: bool,
        start_step: int,
    ) -> None:
        self.settings, self.span, self.is_main = settings, span, is_main
        self.checkpoints, self.agreements = checkpoints, agreements
        self.start_step = self.step = start_step
        self.window = LossWindow()
        self.last_loss = float("nan")
        self.first_step_done: tuple[float, int] | None = None  # (time, step) after the warm-up
        self.stopped = False

    def finished(self) -> bool:
        return self.stopped or self.step >= self.span.last_step

    def after_step(self, loss: Any, stop: StopRequest) -> bool:
        """Count the step's loss, then log, agree and checkpoint; True when training is over."""
        self.window.add(loss)
        self.step += 1
        if self.first_step_done is None:
            self.first_step_done = (time.perf_counter(), self.step)
        if self.step % self.settings.log_every == 0:
            self._log_window()
        if self.agreements.due(self.step):
            # Only a stop ends the loop, so until this point ``stopped`` is False.
            self.stopped = self.agreements.agree(self.step, stop.requested)
        if self.finished():
            return True
        every = self.settings.checkpoint_every
        if every and self.step % every == 0:
            self.checkpoints.save(self.step, last=False)
        return False

    def _log_window(self) -> None:
        """A metric line (main rank) for the window that ends at this step; a new window."""
        self.last_loss = self.window.mean()
        if self.is_main:
            seconds = max(time.perf_counter() - self.window.started, 1e-9)
            log_metrics(
                step=self.step,
                epoch=self.span.epoch_of(self.step),
                loss=self.last_loss,
                samples_per_sec=self.settings.global_batch * self.window.steps / seconds,
            )
        self.window = LossWindow()

    def result(self) -> LoopResult:
        """Complete the last agreement, keep the last state, and say how the run went."""
        self.agreements.complete()  # every rank completes it; training is over anyway
        if self.window.steps:
            self.last_loss = self.window.mean()
        # The last state is kept (a stopped run resumes from it, a longer run continues from
        # it); without periodic checkpoints only a stop writes one.
        if self.checkpoints.last_saved != self.step and (
            self.stopped or self.settings.checkpoint_every
        ):
            self.checkpoints.save(self.step, last=True)
        return LoopResult(
            self.step,
            self.span.epoch_of(self.step),
            self.last_loss,
            self._throughput(),
            self.stopped,
            trained=self.step - self.start_step,
        )

    def _throughput(self) -> float:
        """Samples per second since the first (warm-up) step ended."""
        if self.first_step_done is None:
            return 0.0
        started, counted_from = self.first_step_done
        elapsed = time.perf_counter() - started
        if elapsed <= 0:
            return 0.0
        return self.settings.global_batch * (self.step - counted_from) / elapsed


def run_training(
    loader: ShardedBatches,
    sampler: torch.utils.data.DistributedSampler,
    train_step: Callable[[Any], torch.Tensor],
    settings: LoopSettings,
    *,
    checkpoint: Callable[[int], Any],
    stop: StopRequest,
    agree: Callable[[torch.Tensor, int, bool], tuple[float, bool]],
    is_main: bool,
    start_step: int = 0,
) -> LoopResult:
    """Train until ``epochs`` or ``max_steps``, or until SIGTERM reaches any rank.

    ``loader`` gives the batches of the epoch ``sampler.set_epoch`` set (any sized iterable
    does); ``train_step(batch)`` runs forward, backward and the optimizer step and returns the
    loss. ``checkpoint(step)`` is called on every rank at the same steps (every
    ``checkpoint_every`` and the last); the callee decides which rank writes and returns the
    file it wrote (None on the others), which the loop announces. A run resumed at
    ``start_step`` skips the batches of its epoch already trained on; one resumed at the end
    trains nothing and says why.

    Metric lines (main rank, every ``log_every`` steps) report the main rank's mean loss over
    the window, so logging needs no collective. The only collective the loop adds is
    ``agree(value, count, stop) -> (sum(value) / sum(count), any(stop))`` over the ranks, run at
    agreed steps a few seconds of training apart: it carries the stop flags and each rank's
    proposal (a CPU tensor) for the interval after the next. Where ``agree`` has ``begin``
    the collective runs in the background and is read at the next agreement, so ranks stop
    together at most two intervals after a SIGTERM and never wait on a round trip.
    """
    span = _Span.of(settings, len(loader))
    if start_step >= span.last_step:
        epoch = span.epoch_of(start_step)
        if is_main:
            say(_nothing_left(start_step, epoch, settings, span.steps_per_epoch))
        return LoopResult(start_step, epoch, float("nan"), 0.0, False, trained=0)
    checkpoints = CheckpointWriter(
        checkpoint,
        checkpoint_every=settings.checkpoint_every,
        announce_every=settings.announce_every_checkpoint,
        epoch_of=span.epoch_of,
        final_epoch=span.epoch_of(span.last_step),
        start_step=start_step,
    )
    run = _Run(
        settings, span, checkpoints, AgreementSchedule(agree, start_step), is_main, start_step
    )
    while not run.finished():
        epoch = run.step // span.steps_per_epoch
        sampler.set_epoch(epoch)
        for batch in _batches(loader, run.step - epoch * span.steps_per_epoch):
            if run.after_step(train_step(batch), stop):
                break
    return run.result()


def _nothing_left(start_step: int, epoch: int, settings: LoopSettings, steps_per_epoch: int) -> str:
    limited = settings.max_steps and settings.max_steps < settings.epochs * steps_per_epoch
    return nothing_left_to_train(
        checkpoint_dir(), start_step, epoch, settings.epochs, settings.max_steps if limited else 0
    )


def final_report(result: LoopResult, is_main: bool) -> None:
    """The last metric line (none when this run trained nothing), and why training ended."""
    if not is_main or not result.trained:
        return
    log_metrics(
        step=result.step,
        epoch=result.epoch,
        loss=result.loss,
        samples_per_sec=result.samples_per_sec,
    )
    if result.stopped:
        say(f"stopped by SIGTERM at step={result.step}; exiting {TERMINATED_EXIT_CODE}")


def exit_code(result: LoopResult) -> int:
    return TERMINATED_EXIT_CODE if result.stopped else 0


def finish(result: LoopResult, *, rank: int, model: Any, is_main: bool) -> int:
    """After the loop: the last report, every rank's checksum, the saved model; the exit code.

    A stopped run saves no model: its checkpoint holds the state to resume from.
    """
    final_report(result, is_main)
    report_checksum(rank, model.state_dict())
    if is_main and not result.stopped:
        save_weights(model, model_dir())
    return exit_code(result)
