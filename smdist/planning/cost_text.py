"""What a job or a search may cost, in the line ``submit`` and ``tune`` print before sending it.

The figures are the plan's (``Plan.cost``: the catalogue's on-demand price, the instance count,
``max_run``), so ``plan``, ``submit`` and ``tune`` never disagree; a search multiplies them by
its trials: per hour by the trials that run at once, the bound by every trial it may start.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smdist.planning.plan_value import PlanValue as Plan
    from smdist.spec.cluster import Cluster
    from smdist.spec.tuning import Tuning


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def hosts_text(cluster: Cluster) -> str:
    """``2 x ml.g5.xlarge``; ``gpu: 2 x ml.g5.xlarge + data: 1 x ml.c5.2xlarge``; ``2 x
    ml.p5.48xlarge (first of 2 preferences)``."""
    if cluster.instance_groups:
        return " + ".join(
            f"{g.name}: {g.instance_count} x {g.instance_type}" for g in cluster.instance_groups
        )
    text = f"{cluster.instance_count} x {cluster.instance_type}"
    if len(cluster.instance_preferences) > 1:
        text += f" (first of {len(cluster.instance_preferences)} preferences)"
    return text


def job_cost_line(plan: Plan) -> str:
    """``cost: $2.01/hour (2 x ml.g5.xlarge), at most $2.01 if it runs to max_run (3600 s) ...``"""
    cost, cluster = plan.cost, plan.spec.cluster
    if cost.per_hour is None:
        return f"cost: unknown (the catalogue has no price for {hosts_text(cluster)})"
    notes = "".join(f"; {note}" for note in cost.notes)
    return (
        f"cost: {money(cost.per_hour)}/hour ({hosts_text(cluster)}), "
        f"at most {money(cost.max_run)} if it runs to max_run ({cost.max_run_seconds} s); "
        f"{cost.region} on-demand prices{notes}"
    )


def search_trials(tuning: Tuning) -> int:
    """The trials a search may start: ``max_jobs``; a Grid without it, every combination."""
    if tuning.max_jobs is not None:
        return tuning.max_jobs
    return math.prod(len(getattr(p, "values", None) or [None]) for p in tuning.parameters.values())


def search_cost_line(plan: Plan, tuning: Tuning) -> str:
    """``cost: $2.01/hour per trial, $4.02/hour with 2 at a time; at most $16.08 for 8 ...``"""
    cost, cluster = plan.cost, plan.spec.cluster
    if cost.per_hour is None or cost.max_run is None:
        return f"cost: unknown (the catalogue has no price for {hosts_text(cluster)})"
    trials, parallel = search_trials(tuning), tuning.max_parallel_jobs
    at_once = min(parallel, trials)
    return (
        f"cost: {money(cost.per_hour)}/hour per trial ({hosts_text(cluster)}), "
        f"{money(cost.per_hour * at_once)}/hour with {at_once} at a "
        f"time; at most {money(cost.max_run * trials)} if all {trials} trials run to max_run "
        f"({cost.max_run_seconds} s); {cost.region} on-demand prices"
    )
