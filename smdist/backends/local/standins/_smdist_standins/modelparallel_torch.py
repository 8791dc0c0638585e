"""Stand-in for ``smdistributed.modelparallel.torch`` (SMP v1): every name is the one of
``smdist.runtime.smp.api``. What it does and does not reproduce: ``smdist.runtime.smp``."""

from smdist.runtime.smp import api as _api

SMDIST_STAND_IN = True


def __getattr__(name: str):  # noqa: ANN202 - PEP 562: smp.init, smp.step, smp.DistributedModel ...
    return getattr(_api, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_api)) | {"SMDIST_STAND_IN"})
