"""Device and precision: one process per GPU, bf16 where the GPU has it, fp32 on CPUs."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smdist.runtime.environments import MPIEnvironment, TorchElasticEnvironment
from smdist.runtime.torch_training.process import ConfigurationError

if TYPE_CHECKING:
    import torch


def processes_on_this_host() -> int:
    """The launcher's count of processes on this host, as the cluster environments read it
    (torchrun's LOCAL_WORLD_SIZE, Open MPI's or Horovod gloo's local size); 1 without one."""
    for launcher in (TorchElasticEnvironment, MPIEnvironment):
        if launcher.detect(os.environ):
            return launcher(os.environ).devices_per_node
    return 1


def share_cpu_threads(processes: int | None = None) -> None:
    """Give each process its share of the cores unless OMP_NUM_THREADS says otherwise.

    torchrun sets OMP_NUM_THREADS=1 for several processes per host; mpirun and horovodrun do
    not, and N processes each spinning as many threads as there are cores run many times
    slower than N processes sharing them.
    """
    import torch

    if "OMP_NUM_THREADS" not in os.environ:
        share = (os.cpu_count() or 1) // max(processes or processes_on_this_host(), 1)
        torch.set_num_threads(max(1, share))


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
