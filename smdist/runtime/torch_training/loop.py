"""The training loop: metric lines, periodic checkpoints and a SIGTERM-safe stop, with no
host-device synchronisation on ordinary steps.

Checkpoints are written every ``checkpoint_every`` steps and once more at the end; a line says
so at most once per epoch (every time when the job chose ``checkpoint_every`` itself) and for
the last one, so a short run is not buried in them. A run resumed from a checkpoint that is
already at the end trains nothing and says so in one line instead of reporting steps it did not
run.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smdist.runtime.checkpoints import nothing_left_to_train
from smdist.runtime.metrics import log_metrics
from smdist.runtime.paths import checkpoint_dir, model_dir
from smdist.runtime.stop import TERMINATED_EXIT_CODE, StopRequest
from smdist.runtime.torch_training.process import ConfigurationError, say
from smdist.runtime.torch_training.weights import report_checksum, save_weights

if TYPE_CHECKING:
    import torch

# Ranks agree on whether to stop (SIGTERM) at steps they all know in advance: the first time
# after FIRST_AGREEMENT_STEPS steps, then every AGREEMENT_SECONDS of training as the ranks
# measure it (1 to MAX_AGREEMENT_INTERVAL steps). SageMaker allows 120 s between SIGTERM and
# SIGKILL; an agreement costs one small collective, so a few seconds apart it costs nothing.
FIRST_AGREEMENT_STEPS = 10
AGREEMENT_SECONDS = 2.0
MAX_AGREEMENT_INTERVAL = 1000


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


def _batches(loader: Any, skip: int) -> Iterator:
    iterator = iter(loader)
    for _ in range(skip):
        next(iterator)
    return iterator


class _Window:
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


def run_training(
    loader: torch.utils.data.DataLoader,
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

    ``train_step(batch)`` runs forward, backward and the optimizer step and returns the loss.
    ``checkpoint(step)`` is called on every rank at the same steps (every ``checkpoint_every``
    and the last); the callee decides which rank writes and returns the file it wrote (None on
    the others), which the loop announces. A run resumed at ``start_step`` skips the batches of
    its epoch already trained on; one resumed at the end trains nothing and says why.

    Metric lines (main rank, every ``log_every`` steps) report the main rank's mean loss over
    the window, so logging needs no collective. The only collective the loop adds is
    ``agree(value, count, stop) -> (sum(value) / sum(count), any(stop))`` over the ranks, run at
    agreed steps a few seconds of training apart: it carries the stop flags and each rank's
    proposal (a CPU tensor) for the interval after the next. Where ``agree`` has ``begin``
    the collective runs in the background and is read at the next agreement, so ranks stop
    together at most two intervals after a SIGTERM and never wait on a round trip.
    """
    import torch

    start = _starter(agree)
    steps_per_epoch = len(loader)
    step = start_step
    window = _Window()
    last_loss = float("nan")
    last_checkpoint = start_step
    first_step_done: tuple[float, int] | None = None  # (time, step) after the warm-up step
    next_agreement = start_step + FIRST_AGREEMENT_STEPS
    last_agreement = (time.perf_counter(), start_step)
    pending: Answer | None = None  # the agreement started at the previous agreement step
    stopped = False

    def epoch_of(at_step: int) -> int:  # 1-based epoch the step belongs to
        return (max(at_step, 1) - 1) // steps_per_epoch + 1

    last_step = settings.epochs * steps_per_epoch
    if settings.max_steps:
        last_step = min(last_step, settings.max_steps)
    if start_step >= last_step:
        if is_main:
            say(_nothing_left(start_step, epoch_of(start_step), settings, steps_per_epoch))
        return LoopResult(start_step, epoch_of(start_step), float("nan"), 0.0, False, trained=0)

    announced_epoch = 0  # the epoch of the last checkpoint line

    def save(at_step: int, last: bool) -> None:
        nonlocal announced_epoch
        written = checkpoint(at_step)
        epoch = epoch_of(at_step)
        # A line for the first checkpoint of every epoch but the last, and for the last one.
        first_of_epoch = epoch != announced_epoch and epoch != epoch_of(last_step)
        if written is None or not (last or first_of_epoch or settings.announce_every_checkpoint):
            return
        how_often = ""
        if announced_epoch == 0 and not (last or settings.announce_every_checkpoint):
            how_often = (
                f" (saved every {settings.checkpoint_every} steps, shown once per epoch; "
                "set checkpoint_every to see each)"
            )
        announced_epoch = epoch
        say(f"checkpoint step={at_step} written to {written}{how_often}")

    def finished() -> bool:
        return stopped or step >= last_step

    while not finished():
        epoch = step // steps_per_epoch
        sampler.set_epoch(epoch)
        for batch in _batches(loader, step - epoch * steps_per_epoch):
            window.add(train_step(batch))
            step += 1
            if first_step_done is None:
                first_step_done = (time.perf_counter(), step)
            if step % settings.log_every == 0:
                last_loss = window.mean()
                if is_main:
                    seconds = max(time.perf_counter() - window.started, 1e-9)
                    log_metrics(
                        step=step,
                        epoch=epoch_of(step),
                        loss=last_loss,
                        samples_per_sec=settings.global_batch * window.steps / seconds,
                    )
                window = _Window()
            if step == next_agreement:
                now = time.perf_counter()
                step_seconds = (now - last_agreement[0]) / (step - last_agreement[1])
                proposal = min(
                    max(int(AGREEMENT_SECONDS / max(step_seconds, 1e-9)), 1),
                    MAX_AGREEMENT_INTERVAL,
                )
                interval = float(FIRST_AGREEMENT_STEPS)
                if pending is not None:
                    interval, stopped = pending()
                pending = start(torch.tensor(float(proposal)), 1, stop.requested)
                next_agreement = step + max(int(interval), 1)
                last_agreement = (now, step)
            if finished():
                break
            if settings.checkpoint_every and step % settings.checkpoint_every == 0:
                save(step, last=False)
                last_checkpoint = step

    if pending is not None:
        pending()  # every rank completes the collective it started; training is over anyway
    if window.steps:
        last_loss = window.mean()
    # The last state is kept (a stopped run resumes from it, a longer run continues from it);
    # without periodic checkpoints only a stop writes one.
    if last_checkpoint != step and (stopped or settings.checkpoint_every):
        save(step, last=True)
    throughput = 0.0
    if first_step_done is not None:
        started, counted_from = first_step_done
        elapsed = time.perf_counter() - started
        if elapsed > 0:
            throughput = settings.global_batch * (step - counted_from) / elapsed
    return LoopResult(
        step, epoch_of(step), last_loss, throughput, stopped, trained=step - start_step
    )


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
