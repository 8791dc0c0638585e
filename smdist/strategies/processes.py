"""The ``processes_per_host`` field type the strategies share: ``'auto'`` or a positive integer."""

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PositiveInt


def _processes_per_host(value: Any) -> Any:
    """One clear message instead of pydantic's one-per-union-member."""
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise ValueError(f"must be 'auto' or a positive integer, got {value!r}")


ProcessesPerHost = Annotated[
    Literal["auto"] | PositiveInt,
    BeforeValidator(_processes_per_host),
    Field(description="processes started on each host; 'auto' = the instance's GPU count"),
]
