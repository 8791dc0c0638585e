"""Which instance type the emulated hosts stand for (``--instance-type``,
``LocalOptions.instance_type``).

With ``cluster.instance_preferences`` SageMaker starts the job on the first type with capacity
(``SelectedInstanceType``); the plan describes the first. A local run may emulate any of them:
the job is planned as SageMaker would run it on that one (its launch, processes and GPUs
follow that type), which is the job with that preference first. Without preferences the option
emulates another type in place of ``cluster.instance_type``, its ``instance_count`` kept, as
if the job file said so. Instance groups state each group's own type: the option is refused
there. Nothing of this reaches SageMaker: the job file is not changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ValidationError

from smdist.errors import OPTION, Problem, SpecError
from smdist.planning.plan import plan as make_plan
from smdist.spec.cluster import Cluster

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

FIELD = "options.instance_type (--instance-type)"


def _refused(message: str, value: str, valid: str) -> SpecError:
    return SpecError([Problem(FIELD, message, value, valid)], OPTION)


def _cluster(cluster: Cluster, instance_type: str) -> tuple[Cluster, str] | None:
    """The cluster with ``instance_type`` the one emulated, and the log's note; None when it
    is already."""
    preferences = cluster.instance_preferences
    if preferences:
        types = [choice.instance_type for choice in preferences]
        if instance_type not in types:
            listed = ", ".join(f"{t} (instance_preferences[{i}])" for i, t in enumerate(types))
            raise _refused("is not one of the job's cluster.instance_preferences", instance_type,
                           listed)  # fmt: skip
        index = types.index(instance_type)
        if index == 0:
            return None
        chosen = [preferences[index], *preferences[:index], *preferences[index + 1 :]]
        changed = {"instance_preferences": chosen}
        note = (
            f"emulating {instance_type}, cluster.instance_preferences[{index}], as "
            f"--instance-type asks (SageMaker starts the job on the first preference with "
            f"capacity, {types[0]}, before this one)"
        )
    elif cluster.instance_groups:
        groups = ", ".join(f"{g.name}: {g.instance_type}" for g in cluster.instance_groups)
        raise _refused("cannot be given for a job with cluster.instance_groups, whose groups "
                       f"state their own types ({groups})", instance_type,
                       "leave --instance-type out")  # fmt: skip
    elif instance_type == cluster.instance_type:
        return None
    else:
        changed = {"instance_type": instance_type}
        note = (
            f"emulating {instance_type} as --instance-type asks, instead of the job's "
            f"cluster.instance_type {cluster.instance_type} (the job file is unchanged)"
        )
    try:
        made = Cluster.model_validate({**cluster.model_dump(exclude_unset=True), **changed})
    except ValidationError as error:
        detail = "; ".join(str(item.get("msg", "is invalid")) for item in error.errors())
        raise _refused(detail, instance_type, "a SageMaker training instance type, e.g. "
                       "ml.g5.xlarge (smdist instances lists them)") from None  # fmt: skip
    return made, note


def emulated_plan(plan: Plan, instance_type: str | None) -> tuple[Plan, str | None]:
    """``plan`` as the hosts emulate it, with ``instance_type`` chosen, and the log's note
    (None when nothing changed). SpecError (exit 2) for a type the job cannot take."""
    if instance_type is None:
        return plan, None
    chosen = _cluster(plan.spec.cluster, instance_type)
    if chosen is None:
        return plan, None
    cluster, note = chosen
    return make_plan(plan.spec.model_copy(update={"cluster": cluster})), note


__all__ = ["emulated_plan"]
