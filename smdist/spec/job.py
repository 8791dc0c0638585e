"""JobSpec: everything a user states about one distributed training job.

Built in Python or loaded from YAML (same keys), exported as JSON Schema. Field-level rules live
on the fields (so the docs, the schema and the check are one source); rules that need the whole
job (strategy vs. cluster vs. framework version) live in ``smdist.checks.validation``.
"""

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    Field,
    PlainValidator,
    SerializeAsAny,
    ValidationError,
    field_validator,
    model_validator,
)

from smdist.catalog import api
from smdist.errors import Problem, SpecError, suggest
from smdist.spec.api_shapes import (
    CHANNEL_NAME,
    JOB_NAME,
    JOB_NAME_PREFIX_LIMIT,
    KEEP_ALIVE_LIMIT,
    MAX_RUN_LIMIT,
    ROLE_ARN,
    check_uri,
)
from smdist.spec.base import StrictModel
from smdist.spec.cluster import Cluster
from smdist.spec.metrics import MetricDefinition
from smdist.spec.sections import Checkpoint, Code, Input, Kms, Network, Spot
from smdist.spec.tracking import Mlflow, Retry, TensorBoard
from smdist.spec.validation_errors import problems_from_validation_error
from smdist.strategies import kinds
from smdist.strategies.base import Strategy
from smdist.strategies.union import any_strategy, chosen_model, validate_strategy

if TYPE_CHECKING:  # pragma: no cover
    from smdist.spec.tuning import Tuning

HyperparameterValue = str | int | float | bool | list[Any] | dict[str, Any] | None


def _tuning_model() -> "type[Tuning]":
    # lazy: the tuning models are built only for a job with a tuning: section (test_import)
    from smdist.spec.tuning import Tuning

    return Tuning


def validate_tuning(value: Any) -> "Tuning | None":
    """A job's ``tuning:`` section; its models are built only for a job that has one."""
    return None if value is None else _tuning_model().model_validate(value)


def validation_problems(exc: ValidationError, data: Any = None) -> list[Problem]:
    """A job's validation errors as Problems, one per field path. ``data``, the job as given,
    names the models that checked ``strategy`` and ``tuning`` (their keys are listed when one
    is unknown)."""
    chosen: dict[str, type[BaseModel]] = {}
    if isinstance(data, Mapping):
        if (strategy := chosen_model(data.get("strategy"))) is not None:
            chosen["strategy"] = strategy
        if data.get("tuning") is not None:
            chosen["tuning"] = _tuning_model()
    required = {"strategy": f"a mapping such as {{kind: pytorch_ddp}}; kinds: {kinds()}"}
    return problems_from_validation_error(exc, chosen=chosen, required=required)


class _SpecErrors(type(StrictModel)):
    """``JobSpec(...)`` reports a SpecError naming each field, as loading a job file does.

    On the metaclass, not ``__init__``: pydantic calls a custom ``__init__`` from inside its own
    validation, where a SpecError would be wrapped as one more validation error.
    """

    def __call__(cls, *args: Any, **fields: Any) -> Any:
        try:
            return super().__call__(*args, **fields)
        except ValidationError as exc:
            raise SpecError(validation_problems(exc, fields)) from None


class JobSpec(StrictModel, metaclass=_SpecErrors):
    """One distributed training job, independent of where it runs."""

    name: str = Field(description="job name prefix (letters, digits, hyphens; <= 63 chars)")
    # Validated by the model its kind names (smdist.strategies), dumped with that model's fields.
    strategy: Annotated[SerializeAsAny[Strategy], PlainValidator(validate_strategy)]
    cluster: Cluster
    code: Code = Field(default_factory=Code)
    inputs: dict[str, Input] = Field({}, description="channel -> s3:// or file://")
    hyperparameters: dict[str, HyperparameterValue] = Field({})
    output_path: str | None = Field(None, description="where model.tar.gz goes (s3:// or file://)")
    checkpoint: Checkpoint | None = None
    spot: Spot = Field(default_factory=Spot)
    max_run: int = Field(24 * 3600, ge=1, le=MAX_RUN_LIMIT, description="seconds")
    keep_alive: int = Field(0, ge=0, le=KEEP_ALIVE_LIMIT, description="warm pool seconds")
    network: Network = Field(default_factory=Network)
    kms: Kms | None = None
    tags: dict[str, str] = Field({})
    environment: dict[str, str] = Field({})
    role: str | None = Field(None, description="IAM role ARN the job runs as")
    region: str | None = None
    metric_definitions: list[MetricDefinition] = Field(
        [], description="your script's metrics: name + regex over its log"
    )
    tuning: Annotated[SerializeAsAny[StrictModel] | None, PlainValidator(validate_tuning)] = Field(
        None, description="a hyperparameter search (smdist tune)"
    )
    retry: Retry | None = Field(None, description="retries on AWS-side failures")
    infra_check: bool = Field(False, description="InfraCheckConfig: check the hosts first")
    remote_debug: bool = Field(False, description="RemoteDebugConfig: a shell into a host")
    tensorboard: TensorBoard | None = Field(None, description="TensorBoard logs kept in S3")
    mlflow: Mlflow | None = Field(None, description="SageMaker managed MLflow tracking")

    @model_validator(mode="after")
    def _distributed_groups(self) -> "JobSpec":
        """With instance groups, ``cluster``'s type and count read as the groups the strategy
        names: the hosts that run the distributed program."""
        if self.cluster.instance_groups:
            groups = list(getattr(self.strategy, "instance_groups", []))
            object.__setattr__(self, "cluster", self.cluster.for_groups(groups))
        return self

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        # The backend appends a 19-character unique suffix; the whole must fit in 63.
        if not JOB_NAME.match(value) or len(value) > JOB_NAME_PREFIX_LIMIT:
            raise ValueError(
                f"{value!r} is not a usable job name: use 1-{JOB_NAME_PREFIX_LIMIT} letters, "
                "digits and hyphens, starting with a letter or digit (smdist appends a unique "
                "suffix)"
            )
        return value

    @field_validator("inputs", mode="before")
    @classmethod
    def _input_shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ({"uri": v} if isinstance(v, str) else v) for k, v in value.items()}
        return value

    @field_validator("inputs")
    @classmethod
    def _channel_names(cls, value: dict[str, Input]) -> dict[str, Input]:
        for name in value:
            if not CHANNEL_NAME.match(name):
                raise ValueError(f"channel name {name!r} may only use letters, digits, . - _")
        return value

    @field_validator("output_path")
    @classmethod
    def _output(cls, value: str | None) -> str | None:
        return None if value is None else check_uri(value)

    @field_validator("role")
    @classmethod
    def _role(cls, value: str | None) -> str | None:
        if value is not None and not ROLE_ARN.match(value):
            raise ValueError(
                f"{value!r} is not an IAM role ARN such as "
                "arn:aws:iam::123456789012:role/SageMakerRole"
            )
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and value not in api.regions():
            close = suggest(value, api.regions())
            hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
            raise ValueError(
                f"{value!r} is not a Region SageMaker is offered in; {hint}"
                f"valid: {', '.join(api.regions())}"
            )
        return value

    # ---- construction --------------------------------------------------------------------
    # Every way to build a JobSpec takes typed objects (PyTorchDDP(), Cluster(...), Code(...)),
    # plain dicts, or a mix, and reports errors as a SpecError naming each field.
    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> "JobSpec":
        """Validate ``data``; every problem becomes one line of a ``SpecError``
        (``smdist.checks.reading.from_dict`` adds the whole-job errors of the rest)."""
        if not isinstance(data, Mapping):
            raise SpecError([Problem(source, "a job spec must be a mapping of keys", data)])
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise SpecError(validation_problems(exc, data)) from None

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False):
        """A copy with ``update`` applied — validated, unlike pydantic's own ``model_copy``, so
        ``update={"strategy": {"kind": "horovod"}}`` gives a Horovod strategy, not a dict."""
        copied = super().model_copy(deep=deep)
        if not update:
            return copied
        fields = {name: getattr(copied, name) for name in copied.model_fields_set}
        return type(self).from_dict({**fields, **update})

    def to_yaml(self) -> str:
        return yaml.safe_dump(
            self.model_dump(mode="json", by_alias=True, exclude_defaults=True), sort_keys=False
        )

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The job file's JSON Schema: ``strategy`` as the tagged union of every registered
        kind and ``tuning`` as its model (both are validated lazily, so their annotations on
        JobSpec name no model; this builds them all)."""
        return super(JobSpec, _schema_model()).model_json_schema(*args, **kwargs)

    @property
    def distribution_groups(self) -> list[str]:
        """The instance groups that run the distributed program: the strategy's, or the only
        group; none without instance groups."""
        if not self.cluster.instance_groups:
            return []
        named = list(getattr(self.strategy, "instance_groups", []))
        return named or [self.cluster.instance_groups[0].name]

    @property
    def entry_point(self) -> str:
        return self.code.entry_point or self.strategy.default_entry_point


def json_schema() -> dict[str, Any]:
    return JobSpec.model_json_schema(by_alias=True)


@functools.cache
def _schema_model() -> type[JobSpec]:
    """JobSpec with the lazily validated fields typed as the models that validate them."""

    class JobSpecSchema(JobSpec):
        __doc__ = JobSpec.__doc__
        model_config = {"title": "JobSpec"}
        strategy: any_strategy()  # type: ignore[valid-type]
        tuning: _tuning_model() | None = Field(  # type: ignore[valid-type]
            None, description=JobSpec.model_fields["tuning"].description
        )

    return JobSpecSchema
