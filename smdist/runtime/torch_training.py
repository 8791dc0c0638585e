"""What every PyTorch entry point needs besides its parallelism library.

The four PyTorch entry points (DDP, SDDP, SMP v1, SMP v2) differ in how they wrap the model and
average gradients; everything else is the same and lives here so the scripts show only what is
specific to their strategy:

- rendezvous: fill torch.distributed's ``env://`` variables when the launcher (mpirun, a plain
  ``python``) did not, from the detected cluster environment;
- device and precision: one process per GPU, bf16 autocast where the GPU has it (fp16 with a
  gradient scaler otherwise), TF32 matmuls on Ampere and newer; plain fp32 on CPUs;
- data: ``*.npz`` files (``x`` float32 [N, F], ``y`` int64 [N]) from the train channel, or a
  learnable synthetic task; one shard per data-parallel rank;
- a small MLP classifier;
- checkpoints: the main rank writes, the main rank reads the newest and hands it to every rank
  (ranks on other hosts cannot see the main host's checkpoint directory);
- the training loop: logging, periodic checkpoints and a SIGTERM-safe stop, with no host-device
  synchronisation on ordinary steps.

torch is imported inside functions: ``smdist.runtime`` must import without it.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.runtime.checkpoints import latest_checkpoint, save_checkpoint
from smdist.runtime.metrics import log_metrics
from smdist.runtime.stop import TERMINATED_EXIT_CODE, StopRequest

if TYPE_CHECKING:
    import torch

# Ranks agree on whether to stop (SIGTERM) at steps they all know in advance: the first time
# after FIRST_AGREEMENT_STEPS steps, then every AGREEMENT_SECONDS of training as the ranks
# measure it (1 to MAX_AGREEMENT_INTERVAL steps). SageMaker allows 120 s between SIGTERM and
# SIGKILL; an agreement costs one small collective, so a few seconds apart it costs nothing.
FIRST_AGREEMENT_STEPS = 10
AGREEMENT_SECONDS = 2.0
MAX_AGREEMENT_INTERVAL = 1000
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
    from smdist.runtime.environments import detect, torch_env

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
            f"smdist_collective_timeout={seconds} must be 0 (framework default) or a number "
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


# --- device and precision ------------------------------------------------------------------


def pick_device(local_rank: int) -> torch.device:
    """One process per GPU (by local rank); the CPU when there is no GPU."""
    import torch

    if torch.cuda.is_available():
        if local_rank >= torch.cuda.device_count():
            raise ConfigurationError(
                f"local rank {local_rank} has no GPU: this host has "
                f"{torch.cuda.device_count()}; start at most that many processes per host"
            )
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


@dataclass(frozen=True)
class Precision:
    """How forward passes run: fp32, bf16 autocast, or fp16 autocast with loss scaling."""

    device_type: str
    autocast_dtype: torch.dtype | None = None
    tf32: bool = False

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(self.device_type, dtype=self.autocast_dtype)

    def grad_scaler(self) -> Any:
        """A GradScaler for fp16 (whose small range underflows gradients); None otherwise."""
        import torch

        if self.autocast_dtype is torch.float16:
            return torch.amp.GradScaler(self.device_type)
        return None

    def describe(self) -> str:
        if self.autocast_dtype is None:
            text = "fp32"
        else:
            text = str(self.autocast_dtype).replace("torch.", "") + " autocast"
        return text + (", TF32 matmuls" if self.tf32 else "")


def choose_precision(device: torch.device, enabled: bool, allow_fp16: bool = True) -> Precision:
    """bf16 on GPUs that have it, fp16 on older GPUs (if allowed), TF32 from Ampere on.

    CPUs train in fp32: CPU autocast is slower than fp32 for the small models here.
    """
    import torch

    if device.type != "cuda" or not enabled:
        return Precision(device.type)
    major, _ = torch.cuda.get_device_capability(device)
    tf32 = major >= 8
    if tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if torch.cuda.is_bf16_supported():
        return Precision("cuda", torch.bfloat16, tf32)
    return Precision("cuda", torch.float16 if allow_fp16 else None, tf32)


# --- data ----------------------------------------------------------------------------------


def synthetic_classification(
    samples: int, features: int = 32, classes: int = 4, seed: int = 42
) -> torch.utils.data.TensorDataset:
    """A learnable task: labels come from a fixed random two-layer teacher network.

    Every rank builds the same dataset from the seed; the sampler then gives each rank its shard.
    """
    import torch

    if samples <= 0:
        raise ConfigurationError(f"samples={samples} must be greater than 0")
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=generator)
    hidden = torch.tanh(x @ torch.randn(features, 2 * features, generator=generator))
    y = (hidden @ torch.randn(2 * features, classes, generator=generator)).argmax(dim=1)
    return torch.utils.data.TensorDataset(x, y)


def load_npz_dataset(directory: Path) -> torch.utils.data.TensorDataset:
    """Every ``*.npz`` in ``directory`` (sorted by name), arrays ``x`` [N, F] and ``y`` [N]."""
    import numpy as np
    import torch

    files = sorted(Path(directory).glob("*.npz"))
    if not files:
        raise ConfigurationError(
            f"the train channel {directory} holds no *.npz files; give files with arrays "
            "x (float32 [N, F]) and y (int64 [N]), or no train channel for synthetic data"
        )
    xs, ys = [], []
    for file in files:
        with np.load(file) as arrays:
            if "x" not in arrays or "y" not in arrays:
                raise ConfigurationError(
                    f"{file.name} has arrays {sorted(arrays.files)}; it needs x and y"
                )
            x, y = arrays["x"], arrays["y"]
        if x.ndim != 2 or y.ndim != 1 or len(x) != len(y):
            raise ConfigurationError(
                f"{file.name}: x must be [N, F] and y [N] with the same N; got x{list(x.shape)} "
                f"and y{list(y.shape)}"
            )
        if xs and x.shape[1] != xs[0].shape[1]:
            raise ConfigurationError(
                f"{file.name} has {x.shape[1]} features but {files[0].name} has {xs[0].shape[1]}"
            )
        xs.append(x.astype(np.float32))
        ys.append(y.astype(np.int64))
    x_all = torch.from_numpy(np.concatenate(xs))
    y_all = torch.from_numpy(np.concatenate(ys))
    if int(y_all.min()) < 0:
        raise ConfigurationError("labels y must be class indices 0, 1, 2, ...; found negatives")
    return torch.utils.data.TensorDataset(x_all, y_all)


def load_train_data(
    channel: Path | None, samples: int, seed: int
) -> tuple[torch.utils.data.TensorDataset, int, int]:
    """The dataset with its feature and class counts: from the channel, else synthetic."""
    dataset = load_npz_dataset(channel) if channel else synthetic_classification(samples, seed=seed)
    x, y = dataset.tensors
    return dataset, int(x.shape[1]), int(y.max()) + 1


def sharded_loader(
    dataset: torch.utils.data.Dataset,
    batch_size: int,
    num_replicas: int,
    rank: int,
    seed: int,
    pin_memory: bool = False,
) -> tuple[torch.utils.data.DataLoader, torch.utils.data.DistributedSampler]:
    """One shard per data-parallel rank, equal and full batches everywhere.

    Equal batch counts keep ranks in lock-step (a rank with an extra batch would wait for a
    gradient all-reduce no peer joins); full batches keep microbatch splits exact.
    """
    import torch

    if batch_size <= 0:
        raise ConfigurationError(f"batch_size={batch_size} must be greater than 0")
    sampler = torch.utils.data.DistributedSampler(
        dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed, drop_last=True
    )
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, sampler=sampler, drop_last=True, pin_memory=pin_memory
    )
    if len(loader) == 0:
        raise ConfigurationError(
            f"{len(dataset)} samples over {num_replicas} ranks give fewer than one batch of "
            f"{batch_size} per rank; lower batch_size or give more samples"
        )
    return loader, sampler


# --- model ---------------------------------------------------------------------------------


def build_classifier(features: int, classes: int, hidden: int = 128) -> torch.nn.Module:
    """A small MLP: big enough for real gradients, small enough for CPU tests."""
    from torch import nn

    if hidden <= 0:
        raise ConfigurationError(f"hidden_size={hidden} must be greater than 0")
    return nn.Sequential(
        nn.Linear(features, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, classes),
    )


def weights_checksum(state: Mapping[str, Any]) -> str:
    """A short digest of a state dict's tensors: equal on every rank iff the weights are."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(state):
        value = state[name]
        if isinstance(value, torch.Tensor):
            digest.update(name.encode())
            digest.update(value.detach().to("cpu").contiguous().view(torch.uint8).numpy())
    return digest.hexdigest()[:16]


def report_checksum(rank: int, state: Mapping[str, Any]) -> None:
    """Every rank prints its checksum; a test (or a person) compares them."""
    sys.stdout.write(f"smdist: rank={rank} weights_checksum={weights_checksum(state)}\n")
    sys.stdout.flush()


# --- checkpoints ---------------------------------------------------------------------------


def write_checkpoint(directory: Path, step: int, payload: dict) -> Path:
    """Atomically write ``payload`` (plus the step) as the newest checkpoint."""
    import torch

    path = save_checkpoint(directory, step, lambda p: torch.save({**payload, "step": step}, p))
    say(f"checkpoint step={step} written to {path}")
    return path


def read_latest_checkpoint(directory: Path, is_main: bool) -> dict | None:
    """The newest checkpoint on every rank: the main rank reads it and broadcasts it.

    On SageMaker each host has its own checkpoint directory; only the main host is sure to have
    the file, so the other ranks never look for it.
    """
    import torch
    import torch.distributed as dist

    payload = None
    if is_main:
        found = latest_checkpoint(directory)
        if found is not None:
            payload = torch.load(found[1], map_location="cpu", weights_only=True)
            say(f"resuming from checkpoint step={payload['step']} ({found[1]})")
    if dist.is_initialized() and dist.get_world_size() > 1:
        box = [payload]
        dist.broadcast_object_list(box, src=0)
        payload = box[0]
    return payload


# --- the training loop ---------------------------------------------------------------------


@dataclass(frozen=True)
class LoopSettings:
    epochs: int
    max_steps: int  # 0: stop after ``epochs``
    log_every: int
    checkpoint_every: int  # 0: no periodic checkpoints
    global_batch: int  # samples per optimizer step, summed over ranks

    @classmethod
    def from_args(cls, args: Any, replicas: int) -> LoopSettings:
        """The loop's settings from the common hyperparameters, for ``replicas`` data replicas."""
        return cls(
            epochs=args.epochs,
            max_steps=args.max_steps,
            log_every=args.log_every,
            checkpoint_every=args.checkpoint_every,
            global_batch=args.batch_size * replicas,
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


Answer = Callable[[], tuple[float, bool]]


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
    checkpoint: Callable[[int], None],
    stop: StopRequest,
    agree: Callable[[torch.Tensor, int, bool], tuple[float, bool]],
    is_main: bool,
    start_step: int = 0,
) -> LoopResult:
    """Train until ``epochs`` or ``max_steps``, or until SIGTERM reaches any rank.

    ``train_step(batch)`` runs forward, backward and the optimizer step and returns the loss.
    ``checkpoint(step)`` is called on every rank at the same step; the callee decides which rank
    writes. A run resumed at ``start_step`` skips the batches of its epoch already trained on.

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
                checkpoint(step)
                last_checkpoint = step

    if pending is not None:
        pending()  # every rank completes the collective it started; training is over anyway
    if window.steps:
        last_loss = window.mean()
    if stopped and last_checkpoint != step:
        checkpoint(step)
    throughput = 0.0
    if first_step_done is not None:
        started, counted_from = first_step_done
        elapsed = time.perf_counter() - started
        if elapsed > 0:
            throughput = settings.global_batch * (step - counted_from) / elapsed
    return LoopResult(step, epoch_of(step), last_loss, throughput, stopped)


def final_report(result: LoopResult, is_main: bool) -> None:
    """The last metric line, and why training ended."""
    if not is_main:
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


# --- running a script ----------------------------------------------------------------------


def run_entry_point(main: Callable[[], int], leave_group: bool = True) -> None:
    """Run ``main`` and exit with its code; a failure exits non-zero with its reason.

    After ``main`` returns (its models are unreachable by then) the process group is left in
    order (``leave_process_group``) unless ``leave_group`` is False, for libraries that own
    their group. Configuration mistakes exit 2 with one sentence; anything else prints the
    traceback and exits 1, so the launcher (torchrun, mpirun) brings the other ranks down.
    """
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


def save_weights(model: Any, model_dir: Path) -> Path:
    """Save ``model``'s state dict as ``model.pt`` in ``model_dir`` (the main rank calls this)."""
    import torch

    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / "model.pt"
    torch.save(model.state_dict(), path)
    say(f"model saved to {path}")
    return path
