"""plan(spec) -> Plan: everything derived from a JobSpec, nothing fetched.

A Plan is the dry run as a value (TorchX's habit): the CLI's ``plan`` and ``--dry-run``, a
notebook's display and every backend read this same object, so what a user is shown is what
runs. Planning is pure — no I/O, no SDK import — and fast enough for 256-host jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smdist import catalog, wire
from smdist.errors import Problem
from smdist.runtime.host_commands import Launch
from smdist.runtime.metrics import metric_definitions
from smdist.spec import JobSpec, as_job_spec
from smdist.submission import sdk_hyperparameters, tf_model_dir
from smdist.topology import Topology
from smdist.validation import check_or_raise, effective_framework

if TYPE_CHECKING:
    from smdist.submission import Submission

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
    price_per_instance_hour: float | None
    instance_count: int
    max_run_seconds: int
    region: str

    @property
    def per_hour(self) -> float | None:
        if self.price_per_instance_hour is None:
            return None
        return self.price_per_instance_hour * self.instance_count

    @property
    def max_run(self) -> float | None:
        """On-demand cost if the job runs until max_run stops it."""
        hourly = self.per_hour
        return None if hourly is None else hourly * self.max_run_seconds / 3600


@dataclass(frozen=True)
class Plan:
    spec: JobSpec
    job_name: str
    framework: str
    program: str  # what SageMaker runs on every host (sagemaker_program)
    entry_point: str  # the user's training script
    source_dir: str | None  # None: smdist's ready entry points
    topology: Topology
    distribution: dict[str, Any]
    hyperparameters: dict[str, Any]  # typed, exactly the user's
    distribution_hyperparameters: dict[str, Any]  # what the SDK derives from ``distribution``
    wire_hyperparameters: dict[str, str]  # exactly what CreateTrainingJob carries
    environment: dict[str, str]  # the user's, plus smdist's own SMDIST_* settings
    estimator: str
    estimator_kwargs: dict[str, Any]
    gpus_per_host: int
    cost: Cost
    warnings: list[Problem] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return self.topology.world_size

    @property
    def launch(self) -> Launch:
        """How SageMaker starts this job's ranks (``Strategy.launch``)."""
        return self.spec.strategy.launch(self.spec.cluster)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.job_name,
            "framework": self.framework,
            "strategy": self.spec.strategy.kind,
            "launcher": self.spec.strategy.launcher_name,
            "program": self.program,
            "entry_point": self.entry_point,
            "source_dir": self.source_dir,
            "instance_type": self.spec.cluster.instance_type,
            "instance_count": self.spec.cluster.instance_count,
            "gpus_per_host": self.gpus_per_host,
            "topology": self.topology.to_dict(),
            "distribution": self.distribution,
            "hyperparameters": self.wire_hyperparameters,
            "environment": self.environment,
            "estimator": self.estimator,
            "estimator_kwargs": self.estimator_kwargs,
            "cost": {
                "region": self.cost.region,
                "per_hour": self.cost.per_hour,
                "max_run": self.cost.max_run,
            },
            "warnings": [str(w) for w in self.warnings],
        }

    def bind(
        self,
        *,
        job_name: str,
        region: str,
        bucket: str | None,
        role: str | None,
        code_uri: str,
        model_dir: str | None = None,
    ) -> Submission:
        """This plan bound to one job: see ``smdist.submission``."""
        from smdist.submission import bind

        return bind(
            self,
            job_name=job_name,
            region=region,
            bucket=bucket,
            role=role,
            code_uri=code_uri,
            model_dir=model_dir,
        )

    def _repr_html_(self) -> str:
        from smdist.display import plan_html

        return plan_html(self)


def plan(spec: JobSpec | Any) -> Plan:
    """Check ``spec`` and derive what SageMaker will run. Raises SpecError on any error.

    Pure: no I/O, no backend value. What depends on the submission (the job's name, region,
    bucket, role and code location) shows as a placeholder until ``Plan.bind``.
    """
    spec = as_job_spec(spec)  # a JobSpec, or a dict of its fields (typed objects or dicts)
    warnings = check_or_raise(spec)
    strategy, cluster = spec.strategy, spec.cluster
    framework = effective_framework(spec)
    name = JOB_NAME_PLACEHOLDER.format(name=spec.name)
    entry_point = spec.entry_point
    program = strategy.program(entry_point)

    # The script's arguments are exactly the user's hyperparameters (plus what SageMaker adds);
    # smdist's own settings travel in the environment.
    hyperparameters: dict[str, Any] = dict(spec.hyperparameters)
    environment = {**spec.environment, **strategy.smdist_environment(cluster, entry_point)}
    distribution_hps = strategy.distribution_hyperparameters(cluster)
    wire_values = {
        **hyperparameters,
        **sdk_hyperparameters(
            program, name, SUBMIT_DIRECTORY_PLACEHOLDER, spec.region or REGION_PLACEHOLDER
        ),
        **distribution_hps,
    }
    if framework == "tensorflow":
        mpi = bool(distribution_hps.get("sagemaker_mpi_enabled"))
        wire_values["model_dir"] = tf_model_dir(spec.output_path, name, BUCKET_PLACEHOLDER, mpi)

    info = cluster.info
    return Plan(
        spec=spec,
        job_name=name,
        framework=framework,
        program=program,
        entry_point=entry_point,
        source_dir=spec.code.source_dir,
        topology=_topology(spec),
        distribution=strategy.render_distribution(cluster),
        hyperparameters=hyperparameters,
        distribution_hyperparameters=distribution_hps,
        wire_hyperparameters=wire.encode_hyperparameters(wire_values),
        environment=environment,
        estimator=ESTIMATORS[framework],
        estimator_kwargs=_estimator_kwargs(spec, program, hyperparameters, environment),
        gpus_per_host=cluster.gpus_per_host,
        cost=Cost(
            info.price_per_hour if info else None,
            cluster.instance_count,
            spec.max_run,
            catalog.price_region(),
        ),
        warnings=warnings,
    )


def _topology(spec: JobSpec) -> Topology:
    cluster = spec.cluster
    per_host = spec.strategy.resolve_processes_per_host(cluster)
    return spec.strategy.topology(cluster.instance_count, per_host)


def _estimator_kwargs(
    spec: JobSpec, program: str, hyperparameters: dict[str, Any], environment: dict[str, str]
) -> dict:
    """Keyword arguments for the SDK v2 estimator (``sagemaker.pytorch.PyTorch`` / TF)."""
    code, cluster = spec.code, spec.cluster
    kwargs: dict[str, Any] = {
        "entry_point": program,
        "source_dir": code.source_dir,
        "role": spec.role,
        "instance_type": cluster.instance_type,
        "instance_count": cluster.instance_count,
        "hyperparameters": hyperparameters,
        "distribution": spec.strategy.render_distribution(cluster) or None,
        "max_run": spec.max_run,
        "base_job_name": spec.name,
        "metric_definitions": metric_definitions(),
        "environment": dict(environment) or None,
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
