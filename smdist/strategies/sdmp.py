"""SageMaker model parallelism (SMP): ``kind: sdmp``, two library majors chosen by ``version``.

Version 1 (``SMPv1``) pipelines a model under mpirun; version 2 (``SMPv2``) shards it with FSDP
under torchrun. A job file writes ``kind: sdmp`` and ``version: 1 | 2`` (no version means 1);
Python writes ``SMPv1(...)``, ``SMPv2(...)`` or ``SDMP(version=..., ...)``, which returns the
right one. A setting of the other version is refused, naming the version it belongs to.
"""

from typing import Any

from pydantic import ValidationError

from smdist.errors import SpecError
from smdist.spec.validation_errors import problems_from_validation_error
from smdist.strategies.smp_base import ModelParallel
from smdist.strategies.smp_v1 import PLACEMENT_ORDERS, SMPv1
from smdist.strategies.smp_v2 import SMPv2

# The two majors as one type, for the JSON Schema (validation picks one by ModelParallel.model_for).
AnySMP = ModelParallel.union_member()


def SDMP(version: int = 1, **settings: Any) -> SMPv1 | SMPv2:  # noqa: N802 - reads as a type
    """The SMP strategy for ``version`` (1 or 2) with ``settings``, as in a job file.

    ``SDMP(version=2, hybrid_shard_degree=8)`` is ``SMPv2(hybrid_shard_degree=8)``. A setting
    of the other version raises SpecError naming it, e.g. ``strategy.microbatches: is an SMP v1
    setting; remove it or set version: 1``.
    """
    data = {**settings, "version": version}
    try:
        return ModelParallel.model_for(data).model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        raise SpecError(problems_from_validation_error(exc, prefix="strategy")) from None


__all__ = ["PLACEMENT_ORDERS", "SDMP", "AnySMP", "ModelParallel", "SMPv1", "SMPv2"]
