"""SageMaker model parallelism (SMP): ``kind: sdmp``, two library majors chosen by ``version``.

Version 1 (``SMPv1``) pipelines a model under mpirun; version 2 (``SMPv2``) shards it with FSDP
under torchrun. A job file writes ``kind: sdmp`` and ``version: 1 | 2`` (no version means 1);
Python writes ``SMPv1(...)``, ``SMPv2(...)`` or ``SDMP(version=..., ...)``, which returns the
right one. A setting of the other version is refused, naming the version it belongs to.
"""

from typing import Annotated, Any

from pydantic import Discriminator, Tag, TypeAdapter, ValidationError

from smdist.errors import SpecError
from smdist.strategies.smp_base import SMP_TAGS, ModelParallel, validation_problems
from smdist.strategies.smp_v1 import PLACEMENT_ORDERS, SMPv1
from smdist.strategies.smp_v2 import SMPv2


def _version_tag(value: Any) -> str:
    """v2 for version 2; v1 otherwise, whose own check names a version that is neither."""
    version = value.get("version", 1) if isinstance(value, dict) else getattr(value, "version", 1)
    return "sdmp_v2" if version == 2 and not isinstance(version, bool) else "sdmp_v1"


AnySMP = Annotated[
    Annotated[SMPv1, Tag("sdmp_v1")] | Annotated[SMPv2, Tag("sdmp_v2")],
    Discriminator(_version_tag),
]

_ADAPTER: TypeAdapter[SMPv1 | SMPv2] | None = None


def SDMP(version: int = 1, **settings: Any) -> SMPv1 | SMPv2:  # noqa: N802 - reads as a type
    """The SMP strategy for ``version`` (1 or 2) with ``settings``, as in a job file.

    ``SDMP(version=2, hybrid_shard_degree=8)`` is ``SMPv2(hybrid_shard_degree=8)``. A setting
    of the other version raises SpecError naming it, e.g. ``strategy.microbatches: is an SMP v1
    setting; remove it or set version: 1``.
    """
    global _ADAPTER
    if _ADAPTER is None:  # built on first use: keeps importing smdist.strategies cheap
        _ADAPTER = TypeAdapter(AnySMP)
    try:
        return _ADAPTER.validate_python({**settings, "version": version})
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, prefix="strategy")) from None


__all__ = ["PLACEMENT_ORDERS", "SDMP", "SMP_TAGS", "AnySMP", "ModelParallel", "SMPv1", "SMPv2"]
