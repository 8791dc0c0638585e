"""The instances a job runs on: type and count, checked against what SageMaker offers."""

from pydantic import Field, field_validator

from smdist import catalog
from smdist.spec.base import StrictModel
from smdist.spec.instance_types import LOCAL_INSTANCE_TYPES, is_known_instance_type, suggestions

# The API states no maximum; SageMaker's instance quotas are set per account and are far lower.
# smdist's own bound keeps a typo (or 10**30) from making a topology of that many hosts.
MAX_INSTANCE_COUNT = 10_000


class Cluster(StrictModel):
    """``instance_count`` instances of ``instance_type`` (SageMaker's ``ml.*`` names)."""

    instance_type: str = Field(
        description="SageMaker training instance type, e.g. ml.p4d.24xlarge",
        examples=["ml.p3.2xlarge", "ml.g5.12xlarge"],
    )
    instance_count: int = Field(
        1,
        ge=1,
        le=MAX_INSTANCE_COUNT,
        description=f"number of instances (hosts), 1 to {MAX_INSTANCE_COUNT}",
    )

    @field_validator("instance_type")
    @classmethod
    def _known_instance_type(cls, value: str) -> str:
        if is_known_instance_type(value):
            return value
        close = suggestions(value)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        prefix = (
            ""
            if value.startswith("ml.") or value in LOCAL_INSTANCE_TYPES
            else ("SageMaker training instance types start with 'ml.'; ")
        )
        raise ValueError(
            f"{value!r} is not a SageMaker training instance type; {prefix}{hint}"
            "see `smdist instances` for the catalogue"
        )

    @property
    def info(self) -> catalog.InstanceInfo | None:
        """Catalogue facts, or None for types only botocore (or local mode) knows."""
        return catalog.instance(self.instance_type)

    @property
    def gpus_per_host(self) -> int:
        info = self.info
        if info is not None:
            return info.gpus
        return 1 if self.instance_type == "local_gpu" else 0

    @property
    def is_local_mode(self) -> bool:
        return self.instance_type in LOCAL_INSTANCE_TYPES
