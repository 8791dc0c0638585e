"""SMP v1's configuration as a training script receives it, read and checked in one place.

SageMaker delivers the ``modelparallel`` parameters of the ``distribution`` as the
hyperparameter ``mp_parameters``, visible to the script as the JSON string
``SM_HP_MP_PARAMETERS``. The real library reads it in ``smp.init()``; the stand-in reads it
here, checks the values the library documents (types, ranges, the rules between fields) and
keeps the result. Unknown keys are reported, not fatal: the library grows keys faster than any
copy of its table.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from smdist.runtime.torch_training import ConfigurationError

MP_PARAMETERS_ENV = "SM_HP_MP_PARAMETERS"

PIPELINES = ("interleaved", "simple")
OPTIMIZE = ("memory", "speed")
NAMED_PLACEMENTS = ("cluster", "spread")

# Keys SMP v1 documents that the stand-in reads but has no local effect for (every rank holds
# the whole model, so there is nothing to partition, offload or shard).
_ACCEPTED_WITHOUT_EFFECT = frozenset(
    {
        "active_microbatches",
        "activation_loading_horizon",
        "contiguous",
        "delayed_parameter_initialization",
        "deterministic_server",
        "fp16_params",
        "horovod",
        "memory_weight",
        "offload_activations",
        "predefined_hooks",
        "prescaled_batch",
        "sdp_gradient_clipping",
        "sdp_hierarchical_allgather",
        "sdp_max_live_parameters",
        "sdp_param_persistence_threshold",
        "sdp_reduce_bucket_size",
        "shard_optimizer_state",
        "skip_tracing",
    }
)


class SMPConfigError(ConfigurationError):
    """An SMP parameter has a value the library would refuse; the message says which."""


@dataclass(frozen=True)
class SMPConfig:
    """The SMP v1 parameters the stand-in acts on, with the library's defaults."""

    pipeline_parallel_degree: int = 1  # "partitions" in older versions and for TensorFlow
    microbatches: int = 1
    pipeline: str = "interleaved"
    optimize: str = "memory"
    placement_strategy: str = "cluster"
    auto_partition: bool = True
    default_partition: int = 0
    ddp: bool = False
    tensor_parallel_degree: int = 1
    sharded_data_parallel_degree: int = 1
    fp16: bool = False
    bf16: bool = False
    other: Mapping[str, Any] = field(default_factory=dict)  # documented keys without local effect
    unknown: tuple[str, ...] = ()  # keys the stand-in does not know

    @property
    def model_parallel_degree(self) -> int:
        """Processes that share one model replica on SageMaker (pipeline x tensor)."""
        return self.pipeline_parallel_degree * self.tensor_parallel_degree

    def check_world_size(self, world_size: int) -> None:
        """The library's rule: the processes must split evenly into model replicas."""
        degree = self.model_parallel_degree
        if world_size % degree:
            raise SMPConfigError(
                f"pipeline_parallel_degree={self.pipeline_parallel_degree} x "
                f"tensor_parallel_degree={self.tensor_parallel_degree} = {degree} processes per "
                f"model replica does not divide the {world_size} processes of this job; use a "
                f"process count that is a multiple of {degree}"
            )
        if self.sharded_data_parallel_degree > 1 and (
            (world_size // degree) % self.sharded_data_parallel_degree
        ):
            raise SMPConfigError(
                f"sharded_data_parallel_degree={self.sharded_data_parallel_degree} does not "
                f"divide the {world_size // degree} data-parallel replicas of this job"
            )


def _as_int(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        else:
            raise SMPConfigError(f"{key}={value!r} must be an integer >= {minimum}")
    if value < minimum:
        raise SMPConfigError(f"{key}={value} must be an integer >= {minimum}")
    return value


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SMPConfigError(f"{key}={value!r} must be true or false")


def _as_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise SMPConfigError(f"{key}={value!r} must be one of {', '.join(choices)}")
    return value


def _as_placement(value: Any) -> str:
    if value in NAMED_PLACEMENTS:
        return value
    if isinstance(value, str) and sorted(value) == ["D", "P", "T"]:
        return value
    raise SMPConfigError(
        f"placement_strategy={value!r} must be 'cluster', 'spread', or an ordering of the "
        "letters D, P and T such as 'DPT'"
    )


def _degree(parameters: Mapping[str, Any]) -> int:
    """pipeline_parallel_degree, or its older name ``partitions``; they must agree if both."""
    given = {key: parameters[key] for key in ("pipeline_parallel_degree", "partitions")}
    given = {key: _as_int(key, value, 1) for key, value in given.items() if value is not None}
    if len(set(given.values())) > 1:
        raise SMPConfigError(
            f"partitions={given['partitions']} and pipeline_parallel_degree="
            f"{given['pipeline_parallel_degree']} disagree; they are two names for the same "
            "setting, give one"
        )
    return next(iter(given.values()), 1)


def config_from_mapping(parameters: Mapping[str, Any]) -> SMPConfig:
    """Check SMP v1 parameters (the ``parameters`` dict of the distribution) and keep them."""
    if not isinstance(parameters, Mapping):
        raise SMPConfigError(
            f'SMP parameters must be a JSON object such as {{"microbatches": 4}}, got '
            f"{type(parameters).__name__}"
        )
    get = {key: parameters.get(key) for key in ("pipeline_parallel_degree", "partitions")}
    defaults = SMPConfig()
    values: dict[str, Any] = {"pipeline_parallel_degree": _degree(get)}
    for key in ("microbatches", "tensor_parallel_degree", "sharded_data_parallel_degree"):
        values[key] = _as_int(key, parameters.get(key, getattr(defaults, key)), 1)
    values["default_partition"] = _as_int(
        "default_partition", parameters.get("default_partition", 0), 0
    )
    for key in ("auto_partition", "ddp", "fp16", "bf16"):
        values[key] = _as_bool(key, parameters.get(key, getattr(defaults, key)))
    pipeline = parameters.get("pipeline", "interleaved")
    values["pipeline"] = _as_choice("pipeline", pipeline, PIPELINES)
    values["optimize"] = _as_choice("optimize", parameters.get("optimize", "memory"), OPTIMIZE)
    values["placement_strategy"] = _as_placement(parameters.get("placement_strategy", "cluster"))

    if values["fp16"] and values["bf16"]:
        raise SMPConfigError("fp16 and bf16 are both true; choose one of them")
    if values["tensor_parallel_degree"] > 1 and not values["ddp"]:
        raise SMPConfigError(
            f'tensor_parallel_degree={values["tensor_parallel_degree"]} needs "ddp": true'
        )
    if (
        not values["auto_partition"]
        and values["default_partition"] >= values["pipeline_parallel_degree"]
    ):
        raise SMPConfigError(
            f"default_partition={values['default_partition']} must be below "
            f"pipeline_parallel_degree={values['pipeline_parallel_degree']}"
        )
    known = set(values) | {"partitions"}
    values["other"] = {k: v for k, v in parameters.items() if k in _ACCEPTED_WITHOUT_EFFECT}
    values["unknown"] = tuple(
        sorted(k for k in parameters if k not in known and k not in _ACCEPTED_WITHOUT_EFFECT)
    )
    return SMPConfig(**values)


def parse_mp_parameters(
    config: Mapping[str, Any] | str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> SMPConfig:
    """The config from ``config`` (a dict or JSON text), else ``SM_HP_MP_PARAMETERS``, else the
    library's defaults."""
    source = "the config argument"
    if config is None:
        config = environ.get(MP_PARAMETERS_ENV)
        source = MP_PARAMETERS_ENV
        if config is None or not config.strip():
            return SMPConfig()
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as error:
            raise SMPConfigError(
                f"{source} is not valid JSON ({error.msg} at character {error.pos}); SageMaker "
                "sets it from the distribution's smdistributed.modelparallel.parameters"
            ) from None
    return config_from_mapping(config)
