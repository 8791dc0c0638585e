"""SMP v2's parameters (``SM_HP_MP_PARAMETERS``): parsed and checked as the library documents
them, and refused where the local stand-in cannot run them."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smdist.runtime.smp.config import MP_PARAMETERS_ENV
from smdist.runtime.torch_training import ConfigurationError

# SMP v2's parameters, in the order SDK v3's ``SMP`` config declares them (its mp_parameters
# JSON follows it).
SMP_V2_PARAMETERS = (
    "hybrid_shard_degree",
    "sm_activation_offloading",
    "activation_loading_horizon",
    "fsdp_cache_flush_warnings",
    "allow_empty_shards",
    "tensor_parallel_degree",
    "context_parallel_degree",
    "expert_parallel_degree",
    "random_seed",
)
KNOWN_KEYS = frozenset(SMP_V2_PARAMETERS)
_LOCAL_ONLY_ONE = ("tensor_parallel_degree", "context_parallel_degree", "expert_parallel_degree")


class SMPv2ConfigError(ConfigurationError):
    """An SMP v2 parameter the library, or the local stand-in, cannot run with."""


@dataclass(frozen=True)
class SMPv2Config:
    hybrid_shard_degree: int = 0
    tensor_parallel_degree: int = 1
    context_parallel_degree: int = 1
    expert_parallel_degree: int = 1
    random_seed: int | None = None
    sm_activation_offloading: bool = True  # the documented default
    unknown: tuple[str, ...] = ()

    def check_world_size(self, world_size: int) -> None:
        """The documented ranges, plus the mesh rule: shard groups must tile the world."""
        if not 0 <= self.hybrid_shard_degree <= world_size:
            raise SMPv2ConfigError(
                f"hybrid_shard_degree={self.hybrid_shard_degree} must be between 0 and the "
                f"world size {world_size}"
            )
        if self.hybrid_shard_degree > 1 and world_size % self.hybrid_shard_degree:
            raise SMPv2ConfigError(
                f"hybrid_shard_degree={self.hybrid_shard_degree} does not divide the world size "
                f"{world_size}; use a divisor of {world_size}"
            )
        for key in _LOCAL_ONLY_ONE:
            value = getattr(self, key)
            if not 1 <= value <= world_size:
                raise SMPv2ConfigError(
                    f"{key}={value} must be between 1 and the world size {world_size}"
                )

    def check_runs_locally(self) -> None:
        for key in _LOCAL_ONLY_ONE:
            if getattr(self, key) != 1:
                raise SMPv2ConfigError(
                    f"{key}={getattr(self, key)} needs SageMaker's SMP v2 library (in its "
                    "PyTorch containers); the local stand-in runs FSDP only, so set it to 1 "
                    "for local runs"
                )


def _as_int(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SMPv2ConfigError(f"{key}={value!r} must be an integer >= {minimum}")
    return value


def _as_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SMPv2ConfigError(f"{key}={value!r} must be true or false")
    return value


def parse_v2_config(
    config: Mapping[str, Any] | str | None = None, environ: Mapping[str, str] = os.environ
) -> SMPv2Config:
    """The config from ``config`` (a dict, JSON text or a JSON file's path), else
    ``SM_HP_MP_PARAMETERS``, else the defaults."""
    source = "the config argument"
    if config is None:
        config, source = environ.get(MP_PARAMETERS_ENV) or "{}", MP_PARAMETERS_ENV
    if isinstance(config, str):
        text = config
        if not text.lstrip().startswith("{") and Path(text).is_file():
            source, text = text, Path(text).read_text(encoding="utf-8")
        try:
            config = json.loads(text)
        except json.JSONDecodeError as error:
            raise SMPv2ConfigError(
                f"{source} is not valid JSON ({error.msg} at character {error.pos})"
            ) from None
    if not isinstance(config, Mapping):
        raise SMPv2ConfigError(
            f'{source} must be a JSON object such as {{"hybrid_shard_degree": 2}}'
        )
    seed = config.get("random_seed")
    return SMPv2Config(
        hybrid_shard_degree=_as_int("hybrid_shard_degree", config.get("hybrid_shard_degree", 0), 0),
        tensor_parallel_degree=_as_int(
            "tensor_parallel_degree", config.get("tensor_parallel_degree", 1), 1
        ),
        context_parallel_degree=_as_int(
            "context_parallel_degree", config.get("context_parallel_degree", 1), 1
        ),
        expert_parallel_degree=_as_int(
            "expert_parallel_degree", config.get("expert_parallel_degree", 1), 1
        ),
        random_seed=None if seed is None else _as_int("random_seed", seed, 0),
        sm_activation_offloading=_as_bool(
            "sm_activation_offloading", config.get("sm_activation_offloading", True)
        ),
        unknown=tuple(sorted(key for key in config if key not in KNOWN_KEYS)),
    )
