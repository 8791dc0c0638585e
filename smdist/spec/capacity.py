"""How a job gets its instances beyond one type and count: heterogeneous instance groups,
ordered instance preferences (capacity fallback), and UltraServer placement.

Field names follow the job file (``cluster.instance_groups`` ...); the request fields they
become are CreateTrainingJob's ``ResourceConfig.InstanceGroups``, ``InstancePreferences`` and
``InstancePlacementConfig``. Limits come from botocore's service model (``api_shapes``).
"""

from pydantic import Field, field_validator

from smdist.spec.api_shapes import (
    INSTANCE_GROUP_NAME_LIMIT,
    PLACEMENTS_LIMIT,
    ULTRA_SERVER_ID_LIMIT,
    check_training_plan,
)
from smdist.spec.base import StrictModel
from smdist.spec.instance_types import check_instance_type

# The API states no maximum; SageMaker's instance quotas are set per account and are far lower.
# smdist's own bound keeps a typo (or 10**30) from making a topology of that many hosts.
MAX_INSTANCE_COUNT = 10_000


class InstanceGroup(StrictModel):
    """One group of a heterogeneous cluster: ``instance_count`` hosts of ``instance_type``."""

    name: str = Field(
        min_length=1,
        max_length=INSTANCE_GROUP_NAME_LIMIT,
        description="group name, unique in the job (SM_CURRENT_INSTANCE_GROUP on its hosts)",
    )
    instance_type: str = Field(description="SageMaker training instance type of the group")
    instance_count: int = Field(1, ge=1, le=MAX_INSTANCE_COUNT, description="hosts in the group")

    @field_validator("instance_type")
    @classmethod
    def _type(cls, value: str) -> str:
        return check_instance_type(value)


class InstancePreference(StrictModel):
    """One choice of an ordered capacity fallback: SageMaker starts the job on the first type
    with capacity (``SelectedInstanceType`` in DescribeTrainingJob)."""

    instance_type: str = Field(description="SageMaker training instance type")
    instance_count: int = Field(ge=1, le=MAX_INSTANCE_COUNT, description="hosts of this type")
    training_plan: str | None = Field(
        None, description="a training plan ARN that reserves this type's capacity"
    )

    @field_validator("instance_type")
    @classmethod
    def _type(cls, value: str) -> str:
        return check_instance_type(value)

    @field_validator("training_plan")
    @classmethod
    def _plan(cls, value: str | None) -> str | None:
        return None if value is None else check_training_plan(value)


class UltraServerPlacement(StrictModel):
    """``instance_count`` of the job's instances on one UltraServer (any one, or ``id``)."""

    instance_count: int = Field(ge=1, le=MAX_INSTANCE_COUNT)
    ultra_server_id: str | None = Field(None, min_length=1, max_length=ULTRA_SERVER_ID_LIMIT)


class Placement(StrictModel):
    """Where an UltraServer job's instances go (``ResourceConfig.InstancePlacementConfig``)."""

    ultraservers: list[UltraServerPlacement] = Field(
        [], max_length=PLACEMENTS_LIMIT, description="instances per UltraServer"
    )
    multiple_jobs: bool = Field(
        False, description="EnableMultipleJobs: let other jobs share the UltraServers"
    )
