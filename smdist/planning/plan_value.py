"""A plan's values: what ``plan(spec)`` derived, and what follows from them alone.

``smdist.planning.plan.Plan`` is this value with what is done with it (binding it to a job,
showing it in a notebook); the modules that do those read this one, so neither imports the
other's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Self

from smdist.catalog import wire
from smdist.checks.tuning import metric_definitions
from smdist.contract.launch import Launch
from smdist.errors import Problem
from smdist.planning.wire_values import tf_model_dir, wire_values
from smdist.spec.job import JobSpec
from smdist.spec.topology import Rank, Topology

JOB_NAME_PLACEHOLDER = "{name}-<submit-time>"
SUBMIT_DIRECTORY_PLACEHOLDER = "s3://<bucket>/smdist/source/<content-hash>/sourcedir.tar.gz"
REGION_PLACEHOLDER = "<region>"
BUCKET_PLACEHOLDER = "<bucket>"
ESTIMATORS = {
    "pytorch": "sagemaker.pytorch.PyTorch",
    "tensorflow": "sagemaker.tensorflow.TensorFlow",
}


@dataclass(frozen=True)
class Cost:
    """On-demand figures: the distributed hosts' price, plus ``other_per_hour`` (the other
    instance groups' hosts and the storage a ``volume_size`` asks for); ``notes`` say what the
    figures do not cover (a training plan's prepaid capacity, a fallback type's price)."""

    price_per_instance_hour: float | None
    instance_count: int
    max_run_seconds: int
    region: str
    other_per_hour: float | None = 0.0
    notes: tuple[str, ...] = ()

    @property
    def per_hour(self) -> float | None:
        if self.price_per_instance_hour is None or self.other_per_hour is None:
            return None
        return self.price_per_instance_hour * self.instance_count + self.other_per_hour

    @property
    def max_run(self) -> float | None:
        """On-demand cost if the job runs until max_run stops it."""
        hourly = self.per_hour
        return None if hourly is None else hourly * self.max_run_seconds / 3600


@dataclass(frozen=True)
class PlanValue:
    """A plan's values (see ``smdist.planning.plan.Plan``, which adds binding and display)."""

    spec: JobSpec
    job_name: str
    framework: str
    entry_point: str  # the user's training script
    source_dir: str | None  # None: smdist's ready entry points
    topology: Topology
    launch: Launch  # how the container starts the ranks, rendered once by the strategy
    distribution: dict[str, Any]  # SDK v2's ``distribution`` argument, rendered once
    hyperparameters: dict[str, Any]  # typed, exactly the user's
    environment: dict[str, str]  # the user's, plus smdist's own SMDIST_* settings
    estimator: str
    gpus_per_host: int
    cost: Cost
    warnings: list[Problem] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return self.topology.world_size

    @property
    def program(self) -> str:
        """What SageMaker runs on every host (``sagemaker_program``)."""
        return self.launch.program

    @property
    def wire_hyperparameters(self) -> dict[str, str]:
        """What SDK v2's CreateTrainingJob carries, with placeholders for the submit-time
        values (``bind`` fills them in)."""
        spec = self.spec
        mpi = bool(self.launch.toolkit_hyperparameters.get("sagemaker_mpi_enabled"))
        model_dir = tf_model_dir(spec.output_path, self.job_name, BUCKET_PLACEHOLDER, mpi)
        return wire.encode_hyperparameters(
            wire_values(
                self.hyperparameters,
                self.launch,
                self.framework,
                job_name=self.job_name,
                submit_directory=SUBMIT_DIRECTORY_PLACEHOLDER,
                region=spec.region or REGION_PLACEHOLDER,
                model_dir=model_dir,
            )
        )

    @property
    def metric_definitions(self) -> list[dict[str, str]]:
        """What SageMaker reads from the log: the ready scripts' ``train:*`` and the user's."""
        return metric_definitions(self.spec)

    @property
    def estimator_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the SDK v2 estimator (``sagemaker.pytorch.PyTorch`` / TF)."""
        return _estimator_kwargs(self)

    def resized(
        self,
        hosts: Sequence[str],
        processes_per_host: int,
        mp_parameters: dict[str, Any] | None = None,
    ) -> Self:
        """This plan on other hosts and process counts (the local backend's emulated hosts):
        its launch resized (``Launch.resized``) and its topology laid out again from it, so
        every value read from the plan describes what runs."""
        launch = self.launch.resized(hosts, processes_per_host, mp_parameters)
        topology = self.spec.strategy.topology(
            len(launch.hosts), launch.processes_per_host, launch.mp_parameters
        )
        return replace(self, launch=launch, topology=topology)

    def for_trial(self, name: str, values: Mapping[str, Any]) -> Self:
        """This plan as one trial of its search, as SageMaker's tuner makes one from a tuning
        job's definition: named ``name``, ``values`` added to its hyperparameters, no
        ``tuning`` section (a trial is a plain job); nothing is planned again (the search's
        ranges were checked with the plan)."""
        hyperparameters = {**self.hyperparameters, **values}
        spec = self.spec.model_copy(
            update={"name": name, "tuning": None, "hyperparameters": hyperparameters}
        )
        return replace(
            self,
            spec=spec,
            job_name=JOB_NAME_PLACEHOLDER.format(name=name),
            hyperparameters=hyperparameters,
        )

    def to_record(self) -> dict[str, Any]:
        """Every value of the plan but its spec, as JSON: ``from_record`` reads it back, so a
        plan that travels to another process (the local-mode supervisor) is this value, not
        planned again."""
        topology = self.topology
        return {
            "job_name": self.job_name,
            "framework": self.framework,
            "entry_point": self.entry_point,
            "source_dir": self.source_dir,
            "topology": {
                "hosts": list(topology.hosts),
                "processes_per_host": topology.processes_per_host,
                "ranks": [asdict(rank) for rank in topology.ranks],
                "groups": topology.groups,
            },
            "launch": self.launch.to_dict(),
            "distribution": self.distribution,
            "environment": self.environment,
            "estimator": self.estimator,
            "gpus_per_host": self.gpus_per_host,
            "cost": asdict(self.cost),
            "warnings": [asdict(problem) for problem in self.warnings],
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], spec: JobSpec) -> Self:
        """The plan ``to_record`` wrote, with its ``spec`` (the hyperparameters are the spec's,
        as ``plan`` takes them)."""
        topology = record["topology"]
        return cls(
            spec=spec,
            job_name=record["job_name"],
            framework=record["framework"],
            entry_point=record["entry_point"],
            source_dir=record["source_dir"],
            topology=Topology(
                hosts=list(topology["hosts"]),
                processes_per_host=topology["processes_per_host"],
                ranks=[Rank(**rank) for rank in topology["ranks"]],
                groups=dict(topology["groups"]),
            ),
            launch=Launch.from_dict(record["launch"]),
            distribution=dict(record["distribution"]),
            hyperparameters=dict(spec.hyperparameters),
            environment=dict(record["environment"]),
            estimator=record["estimator"],
            gpus_per_host=record["gpus_per_host"],
            cost=Cost(**{**record["cost"], "notes": tuple(record["cost"].get("notes", ()))}),
            warnings=[Problem(**problem) for problem in record["warnings"]],
        )

    def to_dict(self) -> dict[str, Any]:
        """The plan's own values; what an SDK line makes of them (the call, its distribution
        and hyperparameters) is ``backends.sagemaker.rendering``'s."""
        return {
            "job_name": self.job_name,
            "framework": self.framework,
            "strategy": self.spec.strategy.kind,
            "launcher": self.launch.launcher.value,
            "program": self.program,
            "entry_point": self.entry_point,
            "source_dir": self.source_dir,
            "instance_type": self.spec.cluster.instance_type,
            "instance_count": self.spec.cluster.instance_count,
            "gpus_per_host": self.gpus_per_host,
            "topology": self.topology.to_dict(),
            "launch": self.launch.to_dict(),
            "environment": self.environment,
            "cost": {
                "region": self.cost.region,
                "per_hour": self.cost.per_hour,
                "max_run": self.cost.max_run,
            },
            "warnings": [str(w) for w in self.warnings],
        }


def _estimator_kwargs(plan: PlanValue) -> dict[str, Any]:
    spec = plan.spec
    code, cluster = spec.code, spec.cluster
    kwargs: dict[str, Any] = {
        "entry_point": plan.program,
        "source_dir": code.source_dir,
        "role": spec.role,
        "instance_type": cluster.instance_type,
        "instance_count": cluster.instance_count,
        "hyperparameters": plan.hyperparameters,
        "distribution": plan.distribution or None,
        "max_run": spec.max_run,
        "base_job_name": spec.name,
        "metric_definitions": plan.metric_definitions,
        "environment": dict(plan.environment) or None,
    }
    if code.image_uri:
        kwargs["image_uri"] = code.image_uri
    else:
        kwargs["framework_version"] = code.framework_version
        kwargs["py_version"] = code.py_version
    if spec.output_path:
        kwargs["output_path"] = spec.output_path
    if spec.checkpoint is not None:
        kwargs["checkpoint_s3_uri"] = spec.checkpoint.s3_uri
        kwargs["checkpoint_local_path"] = spec.checkpoint.local_path
    if spec.spot.enabled:
        kwargs["use_spot_instances"] = True
        kwargs["max_wait"] = spec.spot.max_wait or spec.max_run
    if spec.keep_alive:
        kwargs["keep_alive_period_in_seconds"] = spec.keep_alive
    network = spec.network
    if network.subnets:
        kwargs["subnets"] = network.subnets
        kwargs["security_group_ids"] = network.security_group_ids
    if network.isolation:
        kwargs["enable_network_isolation"] = True
    if network.encrypt_inter_container_traffic:
        kwargs["encrypt_inter_container_traffic"] = True
    if spec.kms is not None:
        if spec.kms.volume_key_id:
            kwargs["volume_kms_key"] = spec.kms.volume_key_id
        if spec.kms.output_key_id:
            kwargs["output_kms_key"] = spec.kms.output_key_id
    if spec.tags:
        kwargs["tags"] = [{"Key": k, "Value": v} for k, v in spec.tags.items()]
    return {k: v for k, v in kwargs.items() if v is not None}
