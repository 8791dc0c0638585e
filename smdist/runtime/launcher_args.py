"""The launcher's settings: the training script, processes per host, restarts, the rendezvous
port and the hosts timeout, from ``SMDIST_*`` variables and SageMaker's; bad ones raise
``LauncherArgumentError`` (the launcher exits 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..contract.launch import resolve_processes_per_host as resolve_processes_per_host
from ..contract.program import TORCHRUN_PORT
from .environments.sagemaker import SageMakerEnvironment
from .hosts import DEFAULT_TIMEOUT_S
from .settings import MAX_RESTARTS, PROCESSES_PER_HOST, TRAINING_SCRIPT, SettingsError
from .settings import whole_number as _whole_number

RDZV_PORT_ENV = "SMDIST_RDZV_PORT"
HOSTS_TIMEOUT_ENV = "SMDIST_HOSTS_TIMEOUT_S"
# Where the hosts meet when nothing names a port: the container's own MASTER_PORT.
DEFAULT_RDZV_PORT = TORCHRUN_PORT


class LauncherArgumentError(ValueError):
    """A launcher argument or variable is missing or malformed; the launcher exits 2."""


@dataclass(frozen=True)
class LauncherArgs:
    training_script: str
    processes_per_host: int | None  # None: "auto"
    max_restarts: int = 0
    script_args: list[str] = field(default_factory=list)


def _parse_processes_per_host(value: str) -> int | None:
    text = value.strip()
    if text.lower() in ("", "auto"):
        return None
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise LauncherArgumentError(
        f"{PROCESSES_PER_HOST}={value!r} is not valid: expected 'auto' (one process per GPU, "
        "1 on CPU) or a whole number >= 1."
    )


def read_launcher_args(environ: Mapping[str, str], argv: Sequence[str]) -> LauncherArgs:
    """The launcher's settings from ``SMDIST_*`` variables; ``argv`` is the script's, as is."""
    script = environ.get(TRAINING_SCRIPT, "").strip()
    if not script:
        raise LauncherArgumentError(
            f"{TRAINING_SCRIPT} is not set: it names the training script the launcher starts, "
            "e.g. train.py."
        )
    try:
        max_restarts = _whole_number(environ, MAX_RESTARTS, 0)
    except SettingsError as error:
        raise LauncherArgumentError(str(error)) from None
    return LauncherArgs(
        training_script=script,
        processes_per_host=_parse_processes_per_host(environ.get(PROCESSES_PER_HOST, "auto")),
        max_restarts=max_restarts,
        script_args=list(argv),
    )


def cuda_device_count() -> int:
    """GPUs torch can see; 0 when torch is not installed."""
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count())


def gpus_per_host(
    sagemaker: SageMakerEnvironment, count_devices: Callable[[], int] = cuda_device_count
) -> int:
    """SM_NUM_GPUS when SageMaker announces it, else what the driver reports."""
    announced = sagemaker.announced_gpus()
    return count_devices() if announced is None else announced


def rendezvous_port(environ: Mapping[str, str]) -> int:
    """SMDIST_RDZV_PORT, else MASTER_PORT, else the container's port (``TORCHRUN_PORT``)."""
    for variable in (RDZV_PORT_ENV, "MASTER_PORT"):
        raw = environ.get(variable, "").strip()
        if raw:
            if raw.isdigit() and 1 <= int(raw) <= 65535:
                return int(raw)
            raise LauncherArgumentError(
                f"{variable}={raw!r} is not valid: expected a TCP port number between 1 and 65535."
            )
    return DEFAULT_RDZV_PORT


def hosts_timeout(environ: Mapping[str, str]) -> float:
    raw = environ.get(HOSTS_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise LauncherArgumentError(
            f"{HOSTS_TIMEOUT_ENV}={raw!r} is not valid: expected seconds, a number >= 0."
        )
    return value


def resolve_training_script(script: str, search_dirs: Sequence[Path]) -> Path:
    """The script as an absolute path: as given when absolute, else the first dir holding it."""
    path = Path(script)
    candidates = [path] if path.is_absolute() else [Path(d) / path for d in search_dirs]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    searched = ", ".join(str(c) for c in candidates)
    raise LauncherArgumentError(
        f"{TRAINING_SCRIPT}={script!r} was not found (looked for {searched}): expected a "
        "script in the uploaded source directory."
    )
