"""Stand-in for ``torch.sagemaker`` (SMP v2): ``init``, ``state``, ``transform``,
``is_initialized``... are those of smdist's stand-in (``smdist.runtime.smp_v2``)."""

from smdist.runtime import smp_v2 as _smp_v2

SMDIST_STAND_IN = True


def _stand_in():  # noqa: ANN202
    return _smp_v2.stand_in()


def __getattr__(name: str):  # noqa: ANN202 - PEP 562: tsm.init, tsm.state, tsm.transform ...
    return getattr(_stand_in(), name)


def __dir__() -> list[str]:
    return sorted(set(dir(_stand_in())) | {"SMDIST_STAND_IN"})
