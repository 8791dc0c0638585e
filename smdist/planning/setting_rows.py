"""The rows ``smdist plan`` shows for the settings large jobs reach for, where a job sets them:
storage, instance groups, capacity, file systems, retries, checks and tracking."""

from __future__ import annotations

from smdist.spec.job import JobSpec


def _cluster_rows(spec: JobSpec) -> list[tuple[str, str]]:
    cluster, rows = spec.cluster, []
    if cluster.volume_size is not None:
        rows.append(("volume", f"{cluster.volume_size} GB per host"))
    if cluster.instance_groups:
        distributed = getattr(spec.strategy, "instance_groups", []) or [
            cluster.instance_groups[0].name
        ]
        others = [g.name for g in cluster.instance_groups if g.name not in distributed]
        rows.append(
            (
                "instance groups",
                f"{', '.join(distributed)} run the distributed program"
                + (f"; {', '.join(others)} run the script once per host" if others else ""),
            )
        )
    if cluster.training_plan:
        rows.append(("training plan", cluster.training_plan))
    for index, choice in enumerate(cluster.instance_preferences, start=1):
        plan = f", training plan {choice.training_plan}" if choice.training_plan else ""
        rows.append(
            (f"preference {index}", f"{choice.instance_count} x {choice.instance_type}{plan}")
        )
    if cluster.placement is not None:
        placed = [
            f"{s.instance_count} on {s.ultra_server_id or 'any UltraServer'}"
            for s in cluster.placement.ultraservers
        ]
        shared = ", other jobs may share them" if cluster.placement.multiple_jobs else ""
        rows.append(("placement", (", ".join(placed) or "UltraServers") + shared))
    return rows


def _channel_rows(spec: JobSpec) -> list[tuple[str, str]]:
    rows = []
    for name, channel in spec.inputs.items():
        file_system = channel.file_system
        if file_system is not None:
            rows.append(
                (
                    f"channel {name}",
                    f"{file_system.type} {file_system.id}:{file_system.directory_path} "
                    f"({file_system.access_mode})",
                )
            )
        elif channel.instance_groups:
            rows.append((f"channel {name}", f"on {', '.join(channel.instance_groups)} only"))
    return rows


def _tracking_rows(spec: JobSpec) -> list[tuple[str, str]]:
    rows = []
    if spec.retry is not None:
        rows.append(("retries", f"up to {spec.retry.max_attempts} on AWS-side failures"))
    if spec.infra_check:
        rows.append(("infra check", "hosts checked before the script starts"))
    if spec.remote_debug:
        rows.append(("remote debug", "a shell into a host through SSM"))
    if spec.tensorboard is not None:
        where = spec.tensorboard.s3_uri or "s3://<bucket>/<job name>/tensorboard"
        rows.append(("tensorboard", f"{spec.tensorboard.local_path} -> {where}"))
    if spec.mlflow is not None:
        extra = [x for x in (spec.mlflow.experiment, spec.mlflow.run_name) if x]
        rows.append(
            ("mlflow", spec.mlflow.tracking_server_arn + (f" ({'/'.join(extra)})" if extra else ""))
        )
    return rows


def setting_rows(spec: JobSpec) -> list[tuple[str, str]]:
    return _cluster_rows(spec) + _channel_rows(spec) + _tracking_rows(spec)
