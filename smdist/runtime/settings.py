"""smdist's own settings inside the container: ``SMDIST_*`` variables, never arguments.

A strategy's settings for smdist's launcher and ready entry points travel in the job's
Environment (CreateTrainingJob ``Environment``; the local backend sets the same variables), so
that the arguments a training script receives are exactly its hyperparameters and a script
that parses its flags strictly runs unchanged. Each value is checked here, once; a bad one is
a ``SettingsError`` that names the variable, the value and what is valid.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

BACKEND = "SMDIST_BACKEND"
COMMUNICATION = "SMDIST_COMMUNICATION"
COLLECTIVE_TIMEOUT = "SMDIST_COLLECTIVE_TIMEOUT"
TRAINING_SCRIPT = "SMDIST_TRAINING_SCRIPT"
PROCESSES_PER_HOST = "SMDIST_PROCESSES_PER_HOST"
MAX_RESTARTS = "SMDIST_MAX_RESTARTS"
# Set by the local backend in every process of a job (its token): the job runs under smdist run.
LOCAL_JOB = "SMDIST_LOCAL_JOB_ID"

BACKENDS = ("auto", "nccl", "gloo")
COMMUNICATIONS = ("auto", "ring", "nccl")


class SettingsError(ValueError):
    """An ``SMDIST_*`` variable holds a value smdist cannot use."""


@dataclass(frozen=True)
class Settings:
    backend: str = "auto"  # torch process-group backend: auto | nccl | gloo
    communication: str = "auto"  # TF collective implementation: auto | ring | nccl
    collective_timeout: int = 0  # seconds; 0: the framework's default


def _choice(environ: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    value = environ.get(name, "").strip().lower() or choices[0]
    if value not in choices:
        raise SettingsError(
            f"{name}={environ[name]!r} is not valid: use one of {', '.join(choices)}"
        )
    return value


def whole_number(environ: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < minimum:
        raise SettingsError(f"{name}={raw!r} is not valid: expected a whole number >= {minimum}")
    return int(raw)


def read_settings(environ: Mapping[str, str] | None = None) -> Settings:
    environ = os.environ if environ is None else environ
    return Settings(
        backend=_choice(environ, BACKEND, BACKENDS),
        communication=_choice(environ, COMMUNICATION, COMMUNICATIONS),
        collective_timeout=whole_number(environ, COLLECTIVE_TIMEOUT, 0),
    )
