"""The ``tuning:`` section of a job file (its objective names one of ``metric_definitions``).

Field names follow what a user writes in YAML; the values the tuning API takes (strategy and
scaling names, objective types) are kept as the API spells them, so that a value seen in the
SageMaker console can be pasted in. The rules that need more than one field (a range's bounds
against its scaling, Grid against non-categorical ranges, the objective against the job's metric
definitions, a tuned name also set as a fixed hyperparameter) are in ``smdist.checks.tuning``,
which names the exact field of each problem.

The models are built only for a job that has the section (``smdist.spec.job``).

Two YAML traps are closed here: PyYAML reads ``1e-4`` (no dot) as a string, so a continuous
bound given as a string that reads as a number is taken as that number; and ``Off`` is a YAML
boolean, so early stopping is ``early_stopping: true|false`` rather than the API's
``Off``/``Auto``.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from smdist.catalog import api
from smdist.spec.base import StrictModel

_api = api.field
Scaling = Literal["Auto", "Linear", "Logarithmic", "ReverseLogarithmic"]
CategoricalValue = str | int | float | bool


def _number(value: Any) -> Any:
    """``1e-4`` as YAML 1.1 leaves it (a string) becomes the number it reads as."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number such as 0.001 or 1.0e-3") from None
    return value


class ContinuousRange(StrictModel):
    """A real-valued hyperparameter searched between ``min`` and ``max``."""

    type: Literal["continuous"]
    min: float
    max: float
    scaling: Scaling = Field("Auto", description="Auto, Linear, Logarithmic, ReverseLogarithmic")

    @field_validator("min", "max", mode="before")
    @classmethod
    def _numeric(cls, value: Any) -> Any:
        return _number(value)


class IntegerRange(StrictModel):
    """An integer hyperparameter searched between ``min`` and ``max`` (both included)."""

    type: Literal["integer"]
    min: int
    max: int
    scaling: Literal["Auto", "Linear", "Logarithmic"] = Field(
        "Auto", description="Auto, Linear, Logarithmic (ReverseLogarithmic is continuous-only)"
    )


class CategoricalRange(StrictModel):
    """A hyperparameter that takes one of ``values``."""

    type: Literal["categorical"]
    values: list[CategoricalValue] = Field(
        min_length=_api("tuning_categorical_values").minimum or 1,
        max_length=_api("tuning_categorical_values").limit,
    )


ParameterRange = Annotated[
    ContinuousRange | IntegerRange | CategoricalRange, Field(discriminator="type")
]


class Objective(StrictModel):
    """The metric the search optimises: a name from the job's metric definitions."""

    metric: str = Field(
        min_length=1,
        max_length=_api("tuning_objective_metric").limit,
        description="e.g. train:loss (the ready scripts' [metrics] lines) or your own",
    )
    type: Literal["Minimize", "Maximize"] = "Minimize"


class Hyperband(StrictModel):
    """Hyperband's resource bounds, in the unit the script reports its metric (epochs)."""

    min_resource: int = Field(ge=_api("tuning_hyperband_resource").minimum or 1)
    max_resource: int = Field(ge=_api("tuning_hyperband_resource").minimum or 1)


class WarmStart(StrictModel):
    """Earlier tuning jobs whose results seed this search."""

    parents: list[str] = Field(
        min_length=_api("tuning_warm_start_parents").minimum or 1,
        max_length=_api("tuning_warm_start_parents").limit,
    )
    type: Literal["IdenticalDataAndAlgorithm", "TransferLearning"] = "TransferLearning"

    @field_validator("parents")
    @classmethod
    def _names(cls, values: list[str]) -> list[str]:
        name = _api("tuning_job_name")
        for value in values:
            if not name.matches(value):
                raise ValueError(
                    f"{value!r} is not a tuning job name: 1-{name.limit} letters, digits and "
                    "hyphens, starting and ending with a letter or digit"
                )
        return values


class Tuning(StrictModel):
    """A hyperparameter search over this job: every trial is the job with other values."""

    objective: Objective
    parameters: dict[str, ParameterRange] = Field(
        min_length=1, description="hyperparameter name -> its range"
    )
    strategy: Literal["Bayesian", "Random", "Hyperband", "Grid"] = "Bayesian"
    max_jobs: int | None = Field(
        None, ge=1, description="trials in all (Grid: every combination when left out)"
    )
    max_parallel_jobs: int = Field(1, ge=1, description="trials at a time")
    early_stopping: bool = Field(False, description="stop trials that lag (the API's Auto)")
    hyperband: Hyperband | None = None
    warm_start: WarmStart | None = None
    random_seed: int | None = Field(None, ge=0)
    max_runtime: int | None = Field(
        None,
        ge=_api("tuning_max_runtime").minimum,
        le=_api("tuning_max_runtime").limit,
        description="seconds for the whole search",
    )
    name: str | None = Field(None, description="tuning job name prefix (default: the job's)")
