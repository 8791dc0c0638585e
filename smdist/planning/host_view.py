"""``smdist plan --hosts``: what each host of a planned job runs in SageMaker's container, shown.

For every host (``algo-1`` .. ``algo-N``) it shows the host's ``resourceconfig.json``, the
environment the container gives the script (the toolkit's ``SM_*`` variables, what SageMaker
and the framework container set besides them, the job's own environment), the command the
strategy's launcher starts there (none on the hosts that wait for the first host's mpirun),
``TF_CONFIG`` under the TensorFlow strategies, and the script's own arguments, as
``smdist.planning.container_hosts`` builds them from the container contract for the SDK line
that sends the job (``SdkLine``; the CLI passes the installed one's,
``backends.sagemaker.rendering.host_line``). Values the submission fills in (job name, bucket,
region) keep the plan's placeholders.

This module decides only how the hosts are shown: as a document (``hosts_document``, for
``--json``) or as text (``hosts_text``, the key ``SM_*`` variables and long values cut). A
large cluster is shown compactly: the first hosts and the last, and a count of the ones in
between (which differ from the ones shown only in their names and ranks).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from smdist.planning.container_hosts import V2_LINE, HostView, SdkLine, host_views

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

__all__ = [
    "HostView",
    "SdkLine",
    "host_views",
    "hosts_document",
    "hosts_text",
    "shown_indices",
]

DEFAULT_SHOWN = 4  # hosts shown in full before the view turns compact
# The SM_* variables the text view lists (besides SM_CHANNEL_* and SM_HP_*); --json has all.
KEY_SM_VARIABLES = (
    "SM_CURRENT_HOST",
    "SM_HOSTS",
    "SM_CURRENT_INSTANCE_TYPE",
    "SM_NUM_GPUS",
    "SM_NUM_CPUS",
    "SM_NETWORK_INTERFACE_NAME",
    "SM_USER_ENTRY_POINT",
    "SM_MODULE_DIR",
    "SM_MODEL_DIR",
    "SM_OUTPUT_DATA_DIR",
    "SM_CHANNELS",
    "SM_FRAMEWORK_PARAMS",
    "SM_USER_ARGS",
)
# And on a cluster of instance groups, the host's group and the distribution's.
GROUP_SM_VARIABLES = ("SM_CURRENT_INSTANCE_GROUP", "SM_DISTRIBUTION_INSTANCE_GROUPS")
LONG_VALUE = 160  # characters of a value the text view shows before cutting it


def shown_indices(count: int, limit: int = DEFAULT_SHOWN) -> list[int]:
    """Every host of a small cluster; else the first ``limit - 1`` and the last."""
    if count <= max(limit, 1):
        return list(range(count))
    return [*range(max(limit - 1, 1)), count - 1]


def hosts_document(
    plan: Plan, limit: int = DEFAULT_SHOWN, line: SdkLine = V2_LINE
) -> dict[str, Any]:
    """``smdist plan --hosts --json``: the hosts shown, and how many are left out."""
    count = len(plan.launch.all_hosts)
    indices = shown_indices(count, limit)
    omitted = count - len(indices)
    return {
        "sdk": line.name,
        "driver": line.driver,
        "working_directory": line.working_directory,
        "toolkit_variables_not_set": list(line.dropped),
        "job_name": plan.job_name,
        "strategy": plan.spec.strategy.kind,
        "launcher": plan.launch.launcher.value,
        "instance_type": plan.spec.cluster.instance_type,
        "host_count": count,
        "instance_groups": [
            {
                "name": g.name,
                "instance_type": g.instance_type,
                "hosts": list(g.hosts),
                "distribution": g.name in plan.launch.distribution_groups,
            }
            for g in plan.launch.instance_groups
        ],  # fmt: skip
        "processes_per_host": plan.topology.processes_per_host,
        "hosts": [view.to_dict() for view in host_views(plan, indices, line)],
        "warnings": [str(warning) for warning in plan.warnings],
        "omitted": {
            "count": omitted,
            "first": f"algo-{indices[-2] + 2}" if omitted else None,
            "last": f"algo-{count - 1}" if omitted else None,
        },
    }


def _short(value: str) -> str:
    if len(value) <= LONG_VALUE:
        return value
    return f"{value[: LONG_VALUE - 1]}… ({len(value)} characters; --json has all)"


def _names(names: list[str]) -> str:
    """A host list, its middle left out when it is long."""
    if len(names) <= 4:
        return ",".join(names)
    return f"{names[0]},{names[1]},...,{names[-1]} ({len(names)} hosts)"


def _resources_text(resources: dict[str, Any]) -> str:
    group = resources.get("current_group_name", "")
    return (
        f"current_host {resources['current_host']}, hosts {_names(resources['hosts'])}, "
        f"{resources['current_instance_type']}"
        f"{f' (instance group {group})' if len(resources.get('instance_groups', [])) > 1 else ''}"
        f", network interface {resources['network_interface_name']}"
    )


def _cluster_text(plan: Plan) -> str:
    """``N x type``, or each instance group's ``name: N x type``, the distribution's marked."""
    launch = plan.launch
    if not launch.instance_groups:
        return f"{len(launch.hosts)} x {launch.instance_type}"
    return ", ".join(
        f"{group.name}: {len(group.hosts)} x {group.instance_type}"
        f"{' (distributed)' if group.name in launch.distribution_groups else ''}"
        for group in launch.instance_groups
    )


def _command_text(argv: list[str]) -> str:
    """The argv as a shell would read it; a run of ``-x SM_*`` exports is counted, not listed,
    and so is the middle of a long ``--host`` list."""
    shown: list[str] = []
    exported = 0
    for position, token in enumerate(argv):
        previous = argv[position - 1] if position else ""
        if previous == "--host":
            shown.append(shlex.quote(_names(token.split(","))))
            continue
        if token.startswith("SM_") and previous == "-x":
            exported += 1
            shown.pop()
            if exported == 1:
                shown.append("-x <each SM_* variable: {count}>")
            continue
        shown.append(shlex.quote(token))
    return " ".join(shown).replace("{count}", str(exported))


def hosts_text(plan: Plan, limit: int = DEFAULT_SHOWN, line: SdkLine = V2_LINE) -> list[str]:
    """``smdist plan --hosts``: one block per host shown, the hosts left out counted."""
    count = len(plan.launch.all_hosts)
    indices = shown_indices(count, limit)
    strategy = plan.spec.strategy
    lines = [
        f"{plan.job_name}: {strategy.kind} on {_cluster_text(plan)}, "
        f"launcher {plan.launch.launcher.value} ({plan.launch.launcher.description}), "
        f"{plan.topology.processes_per_host} process(es) per host",
        f"as SDK {line.name} sends it: {line.driver}; the script runs in {line.working_directory}",
        "paths and values as in SageMaker's container; <...> is filled in at submit time",
    ]
    for position, view in enumerate(host_views(plan, indices, line)):
        if position and view.index != indices[position - 1] + 1:
            skipped = view.index - indices[position - 1] - 1
            lines += ["", f"... {skipped} more host(s), algo-{indices[position - 1] + 2} to "
                      f"algo-{view.index}: as above, with their own names and ranks"]  # fmt: skip
        lines += ["", f"{view.name} (host {view.index + 1} of {count}): {view.role}"]
        lines.append(f"  resourceconfig.json: {_resources_text(view.resource_config)}")
        if view.argv is not None:
            lines.append(f"  runs: {_command_text(view.argv)}")
        lines.append(f"  script arguments: {shlex.join(view.script_arguments) or '(none)'}")
        lines.append("  environment:")
        sm = view.sm_environment
        shown = KEY_SM_VARIABLES + (GROUP_SM_VARIABLES if plan.launch.instance_groups else ())
        names = [n for n in shown if n in sm]
        names += sorted(n for n in sm if n.startswith(("SM_CHANNEL_", "SM_HP_")))
        for name in names:
            lines.append(f"    {name}={_short(sm[name])}")
        lines.append(f"    ({len(sm) - len(names)} more SM_* variables; --json lists them all)")
        for name, value in {**view.container_environment, **view.job_environment}.items():
            lines.append(f"    {name}={_short(value)}")
    if plan.warnings:  # as the plan's table ends with them
        lines.append("")
        lines += [f"warning: {warning}" for warning in plan.warnings]
    return lines
