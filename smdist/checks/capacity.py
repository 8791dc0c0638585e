"""Rules for how a job gets its instances: volume size, heterogeneous instance groups, training
plans, instance preferences and UltraServer placement.

Sources: the CreateTrainingJob API reference (ResourceConfig, InstanceGroup, S3DataSource
InstanceGroupNames), the developer guide's heterogeneous-cluster pages ("only one instance group
... can be specified to the distribution configuration"; "not compatible with SageMaker local
mode"), the training toolkit (``sagemaker_training.environment``: the distribution groups start
the runner; ``sagemaker_pytorch_container.training``: other groups run the script as a plain
process), and SDK v2 (``fw_utils.validate_distribution``). Storage sizes: the catalogue.
"""

from __future__ import annotations

from smdist import catalog
from smdist.errors import Problem
from smdist.spec.job import JobSpec

# The strategies whose runner the training toolkit confines to the distribution groups
# (sagemaker_training.environment: mpi, pytorch ddp / torch_distributed, smdataparallel).
# TensorFlow's MWMS and parameter server build TF_CONFIG from every host, and the SMP
# libraries need every host in their process groups.
GROUP_STRATEGIES = ("pytorch_ddp", "horovod", "sddp")
# SageMaker names the placement's UltraServers only for these families (API reference:
# InstancePlacementConfig "for UltraServer instance types"; the catalogue's p6e-gb200).
ULTRASERVER_FAMILIES = ("ml.p6e-gb200.",)


def check_capacity(spec: JobSpec) -> list[Problem]:
    """Every error and warning of the job's instance groups, volume and placement."""
    problems = _check_volume(spec) + _check_groups(spec) + _check_placement(spec)
    return problems + _check_preference_processes(spec) + _preference_problems(spec)


def _check_preference_processes(spec: JobSpec) -> list[Problem]:
    """SageMaker starts the job on whichever preference has capacity, but the launch fixes the
    processes per host when the job is submitted (the toolkit's MPI count, smdist's shipped
    launch): preferences whose types would start different counts cannot share one launch."""
    choices = spec.cluster.instance_preferences
    if len(choices) < 2:
        return []
    counts = {}
    for choice in choices:
        cluster = spec.cluster.model_copy(
            update={"instance_type": choice.instance_type, "instance_groups": []}
        )
        counts[choice.instance_type] = spec.strategy.resolve_processes_per_host(cluster)
    if len(set(counts.values())) == 1:
        return []
    shown = ", ".join(f"{t}: {n}" for t, n in counts.items())
    return [
        Problem(
            "cluster.instance_preferences",
            f"the types would start different processes per host ({shown}), but the "
            f"{spec.strategy.kind} launch fixes the count when the job is submitted and "
            "SageMaker may start it on any of them",
            valid="preferences whose types have the same GPUs per host, or a "
            "strategy.processes_per_host every type can run",
        )
    ]


def _job_types(spec: JobSpec) -> list[tuple[str, str]]:
    """(field, instance type) of every type the job may run on."""
    cluster = spec.cluster
    if cluster.instance_groups:
        return [
            (f"cluster.instance_groups[{i}].instance_type", g.instance_type)
            for i, g in enumerate(cluster.instance_groups)
        ]
    if cluster.instance_preferences:
        return [
            (f"cluster.instance_preferences[{i}].instance_type", p.instance_type)
            for i, p in enumerate(cluster.instance_preferences)
        ]
    return [("cluster.instance_type", cluster.instance_type or "")]


def _check_volume(spec: JobSpec) -> list[Problem]:
    size = spec.cluster.volume_size
    if size is None:
        return []
    problems = []
    for field, instance_type in _job_types(spec):
        info = catalog.instance(instance_type)
        if info is None:
            continue
        if "VolumeSizeInGB" in info.refused_request_fields:
            problems.append(
                Problem(
                    "cluster.volume_size",
                    f"{instance_type} ({field}) trains on its instance storage and SageMaker "
                    "refuses VolumeSizeInGB there",
                    size,
                    f"leave volume_size out on {instance_type}",
                )
            )
        elif info.instance_storage_gb is not None and size > info.instance_storage_gb:
            problems.append(
                Problem(
                    "cluster.volume_size",
                    f"{instance_type} ({field}) trains on its {info.instance_storage_gb} GB of "
                    "NVMe instance storage, which the volume cannot exceed",
                    size,
                    f"at most {info.instance_storage_gb}",
                )
            )
    return problems


def _check_groups(spec: JobSpec) -> list[Problem]:
    cluster, strategy = spec.cluster, spec.strategy
    names = [group.name for group in cluster.instance_groups]
    wanted = list(getattr(strategy, "instance_groups", []))
    problems: list[Problem] = []
    if wanted and not names:
        return [
            Problem(
                "strategy.instance_groups",
                "names instance groups but the cluster has none",
                wanted,
                "cluster.instance_groups, or leave strategy.instance_groups out",
            )
        ]
    if names and strategy.kind not in GROUP_STRATEGIES:
        problems.append(
            Problem(
                "cluster.instance_groups",
                f"the {strategy.kind} strategy starts its ranks on every host; SageMaker's "
                "training toolkit confines a runner to instance groups only for "
                f"{', '.join(GROUP_STRATEGIES)}",
                names,
                f"strategy kind {' or '.join(GROUP_STRATEGIES)}, or one instance type",
            )
        )
    if len(names) > 1 and len(wanted) != 1:
        problems.append(
            Problem(
                "strategy.instance_groups",
                "name the one instance group that runs the distributed program (SageMaker "
                "takes one distribution group; the other groups run the script once per host)",
                wanted,
                f"one of {names}",
            )
        )
    problems += [
        Problem(
            "strategy.instance_groups", f"{name!r} is not a group of the cluster", name, str(names)
        )
        for name in wanted
        if name not in names
    ]
    return problems + _check_channel_groups(spec, names)


def _check_channel_groups(spec: JobSpec, names: list[str]) -> list[Problem]:
    """Channels routed to groups: only on a heterogeneous cluster, only to its groups, all of
    the S3 channels or none (the API refuses a mix), never a file system channel."""
    problems = []
    routed = {name: c for name, c in spec.inputs.items() if c.instance_groups}
    for channel, source in routed.items():
        field = f"inputs.{channel}.instance_groups"
        if not names:
            problems.append(
                Problem(
                    field,
                    "routes a channel to groups of a cluster that has none",
                    source.instance_groups,
                )
            )
            continue
        if source.file_system is not None:
            problems.append(
                Problem(
                    field,
                    "only S3 channels go to instance groups (S3DataSource.InstanceGroupNames); "
                    "a file system is mounted on every host",
                    source.instance_groups,
                    "leave instance_groups out",
                )
            )
        problems += [
            Problem(field, f"{group!r} is not a group of the cluster", group, str(names))
            for group in source.instance_groups
            if group not in names
        ]
    if routed:
        unrouted = [
            name
            for name, c in spec.inputs.items()
            if not c.instance_groups and c.file_system is None
        ]
        problems += [
            Problem(
                f"inputs.{name}.instance_groups",
                "SageMaker takes every channel on instance groups or none; other channels "
                f"name theirs ({', '.join(sorted(routed))})",
                valid=f"a list of {names}",
            )
            for name in unrouted
        ]
    return problems


def _check_placement(spec: JobSpec) -> list[Problem]:
    cluster = spec.cluster
    placement = cluster.placement
    if placement is None:
        return []
    problems = []
    types = [t for _, t in _job_types(spec)]
    off = [t for t in types if not t.startswith(ULTRASERVER_FAMILIES)]
    if off:
        problems.append(
            Problem(
                "cluster.placement",
                f"places instances on UltraServers, which {', '.join(off)} are not",
                valid="an UltraServer type such as ml.p6e-gb200.36xlarge, or no placement",
            )
        )
    placed = sum(s.instance_count for s in placement.ultraservers)
    if placement.ultraservers and placed != cluster.total_instance_count:
        problems.append(
            Problem(
                "cluster.placement.ultraservers",
                f"place {placed} instances but the job has {cluster.total_instance_count}",
                placed,
                f"instance counts that add up to {cluster.total_instance_count}",
            )
        )
    return problems


def _preference_problems(spec: JobSpec) -> list[Problem]:
    """What CreateTrainingJob refuses in and beside instance preferences (SDK v3's Compute
    raises the same while a ModelTrainer is built: ``validate_instance_preferences``)."""
    if not spec.cluster.instance_preferences:
        return []
    problems = []
    types = [choice.instance_type for choice in spec.cluster.instance_preferences]
    repeated = sorted({t for t in types if types.count(t) > 1})
    if repeated:
        problems.append(
            Problem(
                "cluster.instance_preferences",
                f"names {', '.join(repeated)} more than once: "
                "CreateTrainingJob takes each instance type once",
                types,
                "each instance type in one preference",
            )
        )
    if spec.spot.enabled:
        problems.append(
            Problem(
                "spot.enabled",
                "managed spot training cannot run on cluster.instance_preferences: "
                "CreateTrainingJob refuses the two together",
                True,
                "spot.enabled: false, or one cluster.instance_type",
            )
        )
    if spec.cluster.placement is not None:
        problems.append(
            Problem(
                "cluster.placement",
                "UltraServer placement cannot be given beside cluster.instance_preferences: "
                "CreateTrainingJob refuses the two together",
                spec.cluster.placement.model_dump(exclude_none=True),
                "no placement, or one cluster.instance_type",
            )
        )
    return problems
