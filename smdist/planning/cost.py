"""What a job costs per hour on demand, from the catalogue: every instance group's hosts, the
storage a ``volume_size`` asks for, and notes where the price is not the on-demand one (capacity
a training plan reserved, a later instance preference SageMaker may fall back to)."""

from __future__ import annotations

from smdist import catalog
from smdist.planning.plan_value import Cost
from smdist.spec.job import JobSpec

HOURS_PER_MONTH = 730  # AWS prices storage per GB-month of 730 hours


def _price(instance_type: str) -> float | None:
    info = catalog.instance(instance_type)
    return info.price_per_hour if info else None


def _storage_per_hour(spec: JobSpec) -> float:
    """ML storage for a stated ``volume_size`` on every EBS-backed host (NVMe types train on
    instance storage, which the instance price includes)."""
    cluster = spec.cluster
    if cluster.volume_size is None:
        return 0.0
    hosts = [(g.instance_type, g.instance_count) for g in cluster.instance_groups] or [
        (cluster.instance_type or "", cluster.instance_count or 1)
    ]
    ebs_hosts = sum(
        count
        for instance_type, count in hosts
        if not (info := catalog.instance(instance_type)) or info.instance_storage is None
    )
    return ebs_hosts * cluster.volume_size * catalog.storage_price_per_gb_month() / HOURS_PER_MONTH


def _other_groups_per_hour(spec: JobSpec) -> float | None:
    distributed = set(getattr(spec.strategy, "instance_groups", [])) or {
        spec.cluster.instance_groups[0].name
    }
    total = 0.0
    for group in spec.cluster.instance_groups:
        if group.name in distributed:
            continue
        price = _price(group.instance_type)
        if price is None:
            return None
        total += price * group.instance_count
    return total


def _notes(spec: JobSpec) -> tuple[str, ...]:
    cluster = spec.cluster
    notes = []
    planned = cluster.training_plan or any(p.training_plan for p in cluster.instance_preferences)
    if planned:
        notes.append("capacity from a training plan is paid when the plan is bought")
    later = [
        (price * p.instance_count, p.instance_type)
        for p in cluster.instance_preferences[1:]
        if (price := _price(p.instance_type)) is not None
    ]
    if later:
        hourly, instance_type = max(later)
        notes.append(f"up to ${hourly:,.2f}/hour if SageMaker falls back to {instance_type}")
    return tuple(notes)


def job_cost(spec: JobSpec) -> Cost:
    cluster = spec.cluster
    other = _other_groups_per_hour(spec) if cluster.instance_groups else 0.0
    storage = _storage_per_hour(spec)
    return Cost(
        _price(cluster.instance_type or ""),
        cluster.instance_count or 1,
        spec.max_run,
        catalog.price_region(),
        other_per_hour=None if other is None else other + storage,
        notes=_notes(spec),
    )
