"""The value a hyperpod-eks dry run shows and a submit sends: the job's ConfigMap of code and its
``HyperPodPyTorchJob``, rendered from the plan bound to one job name.

The plan runs as planned: replicas from ``cluster.instance_count``, processes per pod (the
operator's ``nprocPerNode``) from the launch, resources from the catalogue, the image from
``code.image_uri`` or the Deep Learning Container the spec resolves to (``--image`` overrides),
the SageMaker contract's variables from its one builder (``environment``), and the script's
arguments as SageMaker's toolkit passes them: its hyperparameters.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smdist.backends.aws_region import dry_run_region
from smdist.backends.hyperpod_eks import resource
from smdist.backends.hyperpod_eks.checks import channel_path, name_problems, refusals, worker_script
from smdist.backends.hyperpod_eks.environment import pod_environment
from smdist.backends.hyperpod_eks.kubeconfig import dry_run_namespace
from smdist.backends.hyperpod_eks.notes import differences
from smdist.backends.hyperpod_eks.pod import (
    CODE_DIR,
    MANAGED_BY,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    PodSettings,
    pod_template,
)
from smdist.backends.hyperpod_eks.resources import pod_resources
from smdist.backends.job_names import unique_job_name
from smdist.checks.images import training_image_uri
from smdist.contract.environment import (
    command_line_arguments,
    decode_hyperparameters,
    split_hyperparameters,
)
from smdist.errors import Problem, SpecError
from smdist.packaging.bundle import pack
from smdist.runtime.settings import MAX_RESTARTS

if TYPE_CHECKING:
    from smdist.backends.hyperpod_eks.options import HyperPodEksOptions
    from smdist.planning.plan import Plan


@dataclass(frozen=True)
class EksSubmission:
    """One job: the plan it runs and the objects created for it, in that order."""

    plan: Plan
    name: str
    namespace: str
    config_map: dict[str, Any]
    job: dict[str, Any]
    notes: tuple[str, ...] = field(default=())

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [self.config_map, self.job]

    def to_yaml(self) -> str:
        return resource.as_yaml(self.objects)

    def to_dict(self) -> dict[str, Any]:
        return {"job_name": self.name, "namespace": self.namespace, "objects": self.objects}


def hyperpodrun_command(nodes: int, per_node: int, script: str, arguments: list[str],
                        grace: int) -> list[str]:  # fmt: skip
    """hyperpodrun's argv: torchrun's counts, workers stopped with SIGTERM then SIGKILL after
    ``grace`` seconds (its own default is SIGKILL at once), the script and its arguments."""
    return [
        "hyperpodrun",
        f"--nnodes={nodes}",
        f"--nproc-per-node={per_node}",
        "--shutdown-signal=SIGTERM",
        f"--shutdown-timeout={grace}",
        f"{CODE_DIR}/{script}",
        *arguments,
    ]


def _labels(options: HyperPodEksOptions) -> dict[str, str]:
    labels = dict(MANAGED_BY)
    if options.queue:
        labels[QUEUE_LABEL] = options.queue
    if options.priority:
        labels[PRIORITY_LABEL] = options.priority
    return labels


def _packed(plan: Plan) -> bytes:
    with tempfile.TemporaryDirectory(prefix="smdist-eks-") as folder:
        package = pack(plan, Path(folder))
        data = package.path.read_bytes()
    if len(data) > resource.CONFIG_MAP_LIMIT:
        why = (
            f"packs to {len(data)} bytes: the job's code travels in a ConfigMap, which holds "
            f"at most {resource.CONFIG_MAP_LIMIT}"
        )
        valid = "a smaller source_dir (.smdistignore leaves out data), or code in the image"
        raise SpecError([Problem("code.source_dir", why, str(plan.source_dir), valid)])
    return data


def _job_name(plan: Plan, options: HyperPodEksOptions) -> str:
    if options.job_name is not None:
        return options.job_name
    problems = name_problems(plan.spec.name, "name")
    if problems:
        raise SpecError(problems)
    return unique_job_name(plan.spec.name)


def build(plan: Plan, options: HyperPodEksOptions) -> EksSubmission:
    """The job ``plan`` is as a HyperPodPyTorchJob; SpecError (exit 2) for what cannot run."""
    refused = refusals(plan, options)
    if refused:
        raise SpecError(refused)
    name = _job_name(plan, options)
    namespace = dry_run_namespace(options.kubeconfig, options.context, options.namespace)
    region, region_note = dry_run_region(options.region, plan.spec.region)
    image = options.image or training_image_uri(plan.spec, region)
    submission = plan.bind(job_name=name, region=region, bucket=None, role=plan.spec.role,
                           code_uri=f"file://{CODE_DIR}")  # fmt: skip
    wire = dict(submission.wire_hyperparameters)
    arguments = command_line_arguments(split_hyperparameters(decode_hyperparameters(wire))[0])
    launch, grace, script = plan.launch, int(options.grace), worker_script(plan) or ""
    settings = PodSettings(
        job_name=name, image=image, instance_type=launch.instance_type,
        command=hyperpodrun_command(len(launch.hosts), launch.processes_per_host,
                                    script, arguments, grace),
        environment=pod_environment(plan, wire, job_name=name, region=region, script=script),
        resources=pod_resources(launch.instance_type),
        code_config_map=resource.code_config_map_name(name),
        channels={n: channel_path(s.uri, options) or "" for n, s in plan.spec.inputs.items()},
        pvc=options.pvc, shared_mount=options.shared_mount, job_root=options.job_root,
        grace=grace, labels=_labels(options), deep_health_checked=options.deep_health_checked,
        service_account=options.service_account,
    )  # fmt: skip
    job = resource.pytorch_job(
        name, namespace, labels=_labels(options), replicas=len(launch.hosts),
        processes_per_node=launch.processes_per_host, template=pod_template(settings),
        max_restarts=int(plan.environment.get(MAX_RESTARTS, "0")), max_run=plan.spec.max_run,
    )  # fmt: skip
    config_map = resource.code_config_map(name, namespace, _packed(plan))
    notes = differences(plan, options)
    if region_note:
        notes.append(f"no AWS region is configured: the job's SAGEMAKER_REGION is {region}")
    return EksSubmission(plan, name, namespace, config_map, job, tuple(notes))
