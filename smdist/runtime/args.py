"""Hyperparameters as a training script receives them, parsed the same way everywhere.

The SageMaker container passes each hyperparameter as ``--name value`` where value is
``str()`` of the JSON-decoded value: booleans arrive as ``True``/``False``, lists as
``['a', 'b']``. The same script also runs under plain torchrun with hand-typed flags, so the
parsers here accept both spellings. Unknown flags are returned, not fatal: the container also
passes hyperparameters meant for other parts of the job.

smdist's own settings (backend, collective implementation and timeout) are not flags: they
come from ``SMDIST_*`` variables (``smdist.runtime.settings``) and are attached to the parsed
namespace under their old names, ``smdist_backend`` and so on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from .settings import SettingsError, read_settings

CHECKPOINT_EVERY = 20
_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}


def str_to_bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {value!r}")


@dataclass
class TrainingArgs:
    """Hyperparameters every ready entry point understands."""

    epochs: int = 3
    max_steps: int = 0  # 0: no limit beyond epochs
    batch_size: int = 32  # per replica; the global batch grows with the world size
    learning_rate: float = 0.01  # for one replica; scaled linearly with the world size
    checkpoint_every: int = CHECKPOINT_EVERY  # steps between checkpoints; 0: none but the last
    mixed_precision: bool = True  # AMP / bf16 / TF32 where the GPU supports them
    seed: int = 42
    samples: int = 4096  # synthetic dataset size when no train channel is given
    log_every: int = 10
    # Set by smdist's strategies through SMDIST_* variables, not flags.
    smdist_backend: str = "auto"  # torch process-group backend: auto | nccl | gloo
    smdist_communication: str = "auto"  # TF collective implementation: auto | ring | nccl
    smdist_collective_timeout: int = 0  # seconds; 0: the framework's default
    unknown: list[str] = field(default_factory=list)
    # The hyperparameters the job set (as opposed to defaults): a setting someone chose can be
    # honoured more literally (every checkpoint logged when checkpoint_every was chosen).
    given: frozenset[str] = frozenset()


def training_arg_parser(**defaults: object) -> argparse.ArgumentParser:
    """A parser for the common hyperparameters; entry points add their own arguments to it."""
    base = TrainingArgs()
    parser = argparse.ArgumentParser(allow_abbrev=False)
    for name, kind in (
        ("epochs", int),
        ("max_steps", int),
        ("batch_size", int),
        ("learning_rate", float),
        ("checkpoint_every", int),
        ("mixed_precision", str_to_bool),
        ("seed", int),
        ("samples", int),
        ("log_every", int),
    ):
        default = defaults.pop(name, getattr(base, name))
        parser.add_argument(f"--{name}", type=kind, default=default)
    if defaults:
        raise TypeError(f"unknown defaults: {sorted(defaults)}")
    return parser


def tensorflow_arg_parser(**defaults: object) -> argparse.ArgumentParser:
    """The common hyperparameters plus ``--model_dir``, for TensorFlow entry points.

    The SageMaker TensorFlow estimator always adds ``--model_dir s3://...``; it is accepted and
    ignored, because the model goes to SM_MODEL_DIR, which SageMaker uploads.
    """
    parser = training_arg_parser(**defaults)
    parser.add_argument(
        "--model_dir",
        default=None,
        help="set by the SageMaker TensorFlow estimator (an S3 URI); ignored: the model is "
        "saved to SM_MODEL_DIR",
    )
    return parser


def given_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> frozenset[str]:
    """The destinations of the options ``argv`` spells out (``--name value``, ``--name=value``).

    The parsers take no abbreviations, so a flag names its option exactly.
    """
    flags = {flag: action.dest for action in parser._actions for flag in action.option_strings}
    given = {flags.get(str(token).split("=", 1)[0]) for token in argv}
    return frozenset(name for name in given if name)


def parse_training_args(
    argv: Sequence[str] | None = None,
    parser: argparse.ArgumentParser | None = None,
) -> argparse.Namespace:
    """Parse known hyperparameters; the rest land in ``namespace.unknown``."""
    parser = parser or training_arg_parser()
    namespace, unknown = parser.parse_known_args(argv)
    namespace.unknown = unknown
    namespace.given = given_options(parser, sys.argv[1:] if argv is None else argv)
    try:
        settings = read_settings()
    except SettingsError as error:
        parser.error(str(error))  # exits 2, as for a bad flag
    namespace.smdist_backend = settings.backend
    namespace.smdist_communication = settings.communication
    namespace.smdist_collective_timeout = settings.collective_timeout
    return namespace
