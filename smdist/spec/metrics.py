"""A job's ``metric_definitions``: what SageMaker reads from the training log, by regex."""

import re

from pydantic import Field, field_validator

from smdist.catalog import api
from smdist.spec.base import StrictModel

_api = api.field


class MetricDefinition(StrictModel):
    """A metric SageMaker reads from the job's log: the regex's first group is the value."""

    name: str = Field(min_length=1, max_length=_api("metric_name").limit)
    regex: str = Field(min_length=1, max_length=_api("metric_regex").limit)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            groups = re.compile(value).groups
        except re.error as exc:
            raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
        if groups < 1:
            raise ValueError(f"{value!r} captures nothing: put the value in a group, e.g. (\\S+)")
        return value

    def as_api(self) -> dict[str, str]:
        return {"Name": self.name, "Regex": self.regex}
