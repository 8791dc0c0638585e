"""What SageMaker model parallelism (SMP) v1 and v2 share: one ``kind``, chosen by ``version``.

The two majors are different libraries with different settings (v1 pipelines a model under
mpirun, v2 shards it with FSDP under torchrun), so each has its own model and a setting of one
is refused on the other with a message naming the version it belongs to — never dropped.
"""

from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from smdist.errors import Problem
from smdist.spec.base import UNKNOWN_KEY
from smdist.spec.cluster import Cluster
from smdist.strategies.base import ProcessesPerHost, Strategy, require_library


class ModelParallel(Strategy):
    """The settings and checks both SMP versions have; ``SMPv1`` and ``SMPv2`` add their own."""

    kind: Literal["sdmp"] = "sdmp"
    framework_name: Literal["pytorch", "tensorflow"] = Field(
        "pytorch", alias="framework", description="pytorch, or tensorflow (version 1 only)"
    )
    processes_per_host: ProcessesPerHost = "auto"
    tensor_parallel_degree: int | None = Field(
        None, ge=1, description="ranks each tensor-parallel layer is split over"
    )
    activation_loading_horizon: int | None = Field(
        None, ge=1, description="how early offloaded activations are loaded back"
    )

    frameworks: ClassVar[tuple[str, ...]] = ("pytorch", "tensorflow")
    # The fields that pick the model when a dump is read back (see Strategy._keep_tags).
    tag_fields: ClassVar[tuple[str, ...]] = ("kind", "version")
    model_config = {"populate_by_name": True}

    @classmethod
    def model_for(cls, value: Any) -> type["ModelParallel"]:
        """SMPv2 for ``version: 2``; SMPv1 otherwise, whose own check names a version that is
        neither (no version means 1 in a job file)."""
        version = value.get("version", 1) if isinstance(value, dict) else value.version
        wanted = 2 if version == 2 and not isinstance(version, bool) else 1
        return next(
            model
            for model in ModelParallel.__subclasses__()
            if model.model_fields["version"].default == wanted
        )

    @classmethod
    def union_member(cls) -> Any:
        """Both majors as one type, told apart by ``version`` as ``model_for`` tells them."""
        majors = sorted(ModelParallel.__subclasses__(), key=_major)
        tagged = tuple(Annotated[model, Tag(f"sdmp_v{_major(model)}")] for model in majors)
        return Annotated[Union[tagged], Discriminator(_version_tag)]  # noqa: UP007 - run time

    @model_validator(mode="before")
    @classmethod
    def _refuse_other_version_settings(cls, data: Any) -> Any:
        """A setting of the other major is named as such, not reported as an unknown key."""
        if not isinstance(data, dict):
            return data
        own = set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}
        for other in ModelParallel.__subclasses__():
            theirs = [key for key in data if key not in own and key in other.model_fields]
            if other is cls or not theirs:
                continue
            version = other.model_fields["version"].default
            also = f" (so {'is' if len(theirs) == 2 else 'are'} {', '.join(theirs[1:])})"
            raise PydanticCustomError(
                UNKNOWN_KEY,
                f"is an SMP v{version} setting{also if len(theirs) > 1 else ''}; "
                f"remove {'them' if len(theirs) > 1 else 'it'} or set version: {version}",
                {"key": theirs[0]},
            )
        return data

    @field_validator("version", mode="before", check_fields=False)
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        if value in (1, 2) and not isinstance(value, bool):
            return value
        raise ValueError(
            f"SMP has versions 1 (pipeline, PyTorch or TensorFlow) and 2 (FSDP-based, "
            f"PyTorch), got {value!r}"
        )

    @property
    def framework(self) -> str:
        return self.framework_name

    @property
    def default_entry_point(self) -> str:
        return f"pytorch_smp_v{self.version}.py"  # type: ignore[attr-defined]

    def requested_processes_per_host(self):
        return self.processes_per_host

    # ---- degrees -------------------------------------------------------------------------
    @property
    def pipeline_degree(self) -> int:
        return 1

    @property
    def tensor_degree(self) -> int:
        return self.tensor_parallel_degree or 1

    @property
    def model_parallel_degree(self) -> int:
        return self.pipeline_degree * self.tensor_degree

    # ---- rendering -----------------------------------------------------------------------
    def parameters(self) -> dict[str, Any]:
        """The ``modelparallel.parameters`` dict (``mp_parameters`` on the wire)."""
        raise NotImplementedError

    def modelparallel(self) -> dict[str, Any]:
        return {"enabled": True, "parameters": self.parameters()}

    def _optional(self, names: Iterable[str]) -> dict[str, Any]:
        """The library-default settings the user set (None = leave the library's default)."""
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    # ---- checks --------------------------------------------------------------------------
    def _library_problems(self, cluster: Cluster, framework_version: str | None) -> list[Problem]:
        version = self.version  # type: ignore[attr-defined]
        return require_library(
            f"smp_v{version}", f"SMP v{version}", cluster, self.framework, framework_version
        )

    def _degree_problem(self, world: int, what: str, path: str) -> list[Problem]:
        degree = self.model_parallel_degree
        if world % degree == 0:
            return []
        return [
            Problem(
                path,
                f"{what} = {degree} does not divide the world size {world} "
                "(instances x processes per host)",
                degree,
                f"a divisor of {world}: " + ", ".join(map(str, divisors(world))),
            )
        ]


def _major(model: type[ModelParallel]) -> int:
    return model.model_fields["version"].default


def _version_tag(value: Any) -> str:
    return f"sdmp_v{_major(ModelParallel.model_for(value))}"


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
