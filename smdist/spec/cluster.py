"""The instances a job runs on: one type and count, heterogeneous groups, or an ordered list of
preferred types; their storage, reserved capacity and UltraServer placement.

Whatever the form, ``instance_type`` and ``instance_count`` read as the hosts that run the
distributed program once the job is validated: given, or derived from the groups the strategy
names (``JobSpec``) or from the first preference. The rest of smdist (the strategy's launch, the
catalogue checks, the local hosts) reads those two; the forms' own rules are in
``smdist.checks.capacity``. Derived values are never written back to a job file.
"""

from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from smdist import catalog
from smdist.spec.api_shapes import (
    INSTANCE_GROUPS_LIMIT,
    INSTANCE_PREFERENCES_LIMIT,
    check_training_plan,
)
from smdist.spec.base import StrictModel
from smdist.spec.capacity import (
    MAX_INSTANCE_COUNT,
    InstanceGroup,
    InstancePreference,
    Placement,
)
from smdist.spec.instance_types import LOCAL_INSTANCE_TYPES, check_instance_type
from smdist.spec.validation_errors import FIELD_PROBLEM

# EBS volumes (gp2/gp3) end at 16 TiB; the API states only a minimum.
MAX_VOLUME_GB = 16_384
DERIVED = ("instance_type", "instance_count")


def _at(field: str, message: str) -> PydanticCustomError:
    """A rule of the whole cluster, reported at ``field``'s path (no braces in ``message``:
    pydantic fills ``{name}`` from the context)."""
    return PydanticCustomError(FIELD_PROBLEM, message, {"key": field})


class Cluster(StrictModel):
    """``instance_count`` instances of ``instance_type`` (SageMaker's ``ml.*`` names), or
    ``instance_groups``, or ``instance_preferences``."""

    instance_type: str | None = Field(
        None,
        description="SageMaker training instance type, e.g. ml.p4d.24xlarge (leave out with "
        "instance_groups or instance_preferences)",
        examples=["ml.p3.2xlarge", "ml.g5.12xlarge"],
    )
    instance_count: int | None = Field(
        None,
        ge=1,
        le=MAX_INSTANCE_COUNT,
        description=f"number of instances (hosts), 1 to {MAX_INSTANCE_COUNT}; default 1",
    )
    volume_size: int | None = Field(
        None,
        ge=1,
        le=MAX_VOLUME_GB,
        description="GB of storage per host (VolumeSizeInGB); default: the SDKs' 30",
    )
    instance_groups: list[InstanceGroup] = Field(
        [],
        max_length=INSTANCE_GROUPS_LIMIT,
        description="a heterogeneous cluster: named groups, each of one type and count",
    )
    training_plan: str | None = Field(
        None, description="training plan ARN whose reserved capacity the job runs on"
    )
    instance_preferences: list[InstancePreference] = Field(
        [],
        max_length=INSTANCE_PREFERENCES_LIMIT,
        description="ordered types: the job starts on the first with capacity",
    )
    placement: Placement | None = Field(None, description="UltraServer placement")
    _derived: tuple[str, ...] = PrivateAttr(())

    @field_validator("instance_type")
    @classmethod
    def _known_instance_type(cls, value: str | None) -> str | None:
        return None if value is None else check_instance_type(value)

    @field_validator("training_plan")
    @classmethod
    def _plan(cls, value: str | None) -> str | None:
        return None if value is None else check_training_plan(value)

    @model_validator(mode="after")
    def _one_form(self) -> "Cluster":
        if self._derived:  # checked when built; pydantic runs this again on a Cluster it is given
            return self
        forms = [
            name
            for name, given in (
                ("instance_type", self.instance_type is not None),
                ("instance_groups", bool(self.instance_groups)),
                ("instance_preferences", bool(self.instance_preferences)),
            )
            if given
        ]
        if not forms:
            raise _at(
                "instance_type",
                "states no instances: give instance_type (and instance_count), "
                "instance_groups, or instance_preferences",
            )
        if len(forms) > 1:
            raise _at(
                forms[1],
                f"{' and '.join(forms)} cannot be given together: instance groups and "
                "preferences state their own types and counts; keep one of them",
            )
        if forms[0] != "instance_type" and self.instance_count is not None:
            raise _at(
                "instance_count",
                f"cannot be given beside {forms[0]}, which state their own counts; remove "
                "instance_count",
            )
        if self.instance_preferences and self.training_plan is not None:
            raise _at(
                "training_plan",
                "cannot be given beside instance_preferences; give each preference its own "
                "training_plan",
            )
        names = [group.name for group in self.instance_groups]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise _at("instance_groups", f"names must be unique; repeated: {repeated}")
        self._derive()
        return self

    def _derive(self, groups: list[str] | None = None) -> None:
        """Fill ``instance_type``/``instance_count`` from the groups named in ``groups`` (the
        strategy's; default: the first group) or from the first preference."""
        if self.instance_groups:
            chosen = [g for g in self.instance_groups if g.name in (groups or ())]
            chosen = chosen or self.instance_groups[:1]
            derived = {
                "instance_type": chosen[0].instance_type,
                "instance_count": sum(g.instance_count for g in chosen),
            }
        elif self.instance_preferences:
            first = self.instance_preferences[0]
            derived = {"instance_type": first.instance_type, "instance_count": first.instance_count}
        elif self.instance_count is None:
            derived = {"instance_count": 1}
        else:
            return
        for name, value in derived.items():
            object.__setattr__(self, name, value)  # not a user's value: no re-validation
        self._derived = tuple(derived)

    def for_groups(self, groups: list[str]) -> "Cluster":
        """This cluster with the distributed program on ``groups`` (the strategy's)."""
        if not self.instance_groups:
            return self
        copied = self.model_copy()
        copied._derive(groups)
        return copied

    @model_serializer(mode="wrap")
    def _without_derived(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self._derived:
                data.pop(name, None)
        return data

    # ---- the hosts ------------------------------------------------------------------------
    @property
    def is_heterogeneous(self) -> bool:
        return bool(self.instance_groups)

    @property
    def total_instance_count(self) -> int:
        """Every host of the job: all groups' hosts with instance groups."""
        if self.instance_groups:
            return sum(group.instance_count for group in self.instance_groups)
        return self.instance_count or 1

    @property
    def info(self) -> catalog.InstanceInfo | None:
        """Catalogue facts, or None for types only botocore (or local mode) knows."""
        return catalog.instance(self.instance_type or "")

    @property
    def gpus_per_host(self) -> int:
        info = self.info
        if info is not None:
            return info.gpus
        return 1 if self.instance_type == "local_gpu" else 0

    @property
    def is_local_mode(self) -> bool:
        return self.instance_type in LOCAL_INSTANCE_TYPES
