"""What each host of a planned job runs in SageMaker's container: ``smdist plan --hosts``.

For every host (``algo-1`` .. ``algo-N``) it shows the host's ``resourceconfig.json``, the
environment the container gives the script (the toolkit's ``SM_*`` variables, what SageMaker
and the framework container set besides them, the job's own environment), the command the
strategy's launcher starts there (none on the hosts that wait for the first host's mpirun),
``TF_CONFIG`` under the TensorFlow strategies, and the script's own arguments: exactly the
job's hyperparameters as ``--name value``, as the toolkit renders them.

Everything comes from the container contract's builder (``smdist.contract.host``), the one the
local backend and smdist's v3 driver give their hosts, applied to the plan with SageMaker's
paths (``/opt/ml``), network interface and ports. Values
the submission fills in (job name, bucket, region) keep the plan's placeholders.
The container differs by the SDK line that sends the job (``SdkLine``; the CLI passes the
installed one's, ``backends.sagemaker.rendering.host_line``): under v2 the image's toolkit
starts the script (with the TensorFlow estimator's ``model_dir``), under v3 a driver in the
``sm_drivers`` channel does, from the v3 request's hyperparameters, in the ``code`` channel.
A large cluster is shown compactly: the first hosts and the last, and a count of the ones in
between (which differ from the ones shown only in their names and ranks).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smdist.contract.commands import (
    HostArguments,
    Image,
    host_command,
    script_environment,
)
from smdist.contract.environment import (
    HostConfig,
    Machine,
    command_line_arguments,
    decode_hyperparameters,
    input_data_config,
    resource_config,
    split_hyperparameters,
)
from smdist.contract.host import CONTAINER_INTERFACE, host_environment

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

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
LONG_VALUE = 160  # characters of a value the text view shows before cutting it


@dataclass(frozen=True)
class SdkLine:
    """What an SDK line's request makes of the container; the default is SDK v2's."""

    name: str = "v2"  # shown: "v2", "v3 (sagemaker 3.27.0)"
    driver: str = "the image's training toolkit starts the launcher"
    # hyperparameters.json with what the driver adds to it; None: the plan's (SDK v2's) own
    hyperparameters: dict[str, str] | None = None
    module_dir: str | None = None  # SM_MODULE_DIR where the line's driver sets its own
    channels: tuple[str, ...] = ()  # channels the line's request adds
    dropped: tuple[str, ...] = ()  # toolkit SM_* names the line's driver does not set
    working_directory: str = "/opt/ml/code"


@dataclass(frozen=True)
class HostView:
    name: str
    index: int
    resource_config: dict[str, Any]
    sm_environment: dict[str, str]  # the toolkit's SM_* variables
    container_environment: dict[str, str]  # set by SageMaker and the framework container
    job_environment: dict[str, str]  # the job's own (the spec's and smdist's SMDIST_*)
    launcher: str
    argv: list[str] | None  # None: the host waits for the first host's mpirun
    role: str
    script_arguments: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.name,
            "index": self.index,
            "resourceconfig": self.resource_config,
            "environment": {
                **self.sm_environment,
                **self.container_environment,
                **self.job_environment,
            },
            "launcher": self.launcher,
            "argv": self.argv,
            "role": self.role,
            "script_arguments": self.script_arguments,
        }


def shown_indices(count: int, limit: int = DEFAULT_SHOWN) -> list[int]:
    """Every host of a small cluster; else the first ``limit - 1`` and the last."""
    if count <= max(limit, 1):
        return list(range(count))
    return [*range(max(limit - 1, 1)), count - 1]


def _channels(plan: Plan) -> dict[str, str]:
    channels = {name: source.distribution for name, source in plan.spec.inputs.items()}
    if plan.spec.network.isolation:  # the code arrives as a channel: the container has no S3
        channels["code"] = "FullyReplicated"
    return channels


def image_assumed(plan: Plan) -> Image:
    """The image a shown command runs in: a current DLC for the job's framework, with the
    toolkit (its gethostname shim), mpi4py, smddprun and smddpmprun."""
    code = plan.spec.code
    torch = code.framework_version if plan.framework == "pytorch" else None
    return Image(torch_version=torch or "")


def host_views(
    plan: Plan, indices: list[int] | None = None, line: SdkLine = SdkLine()
) -> list[HostView]:
    """The hosts at ``indices`` (default: all) of ``plan``'s cluster, as SageMaker runs them
    when SDK ``line`` sends the job."""
    cluster = plan.spec.cluster
    launch = plan.launch
    hosts = list(launch.hosts)
    info = cluster.info
    machine = Machine(num_cpus=info.vcpus if info else 0, num_gpus=plan.gpus_per_host)
    added = dict.fromkeys(line.channels, "FullyReplicated")
    channels = input_data_config({**_channels(plan), **added})
    image = image_assumed(plan)
    wire = dict(plan.wire_hyperparameters if line.hyperparameters is None else line.hyperparameters)

    def environment(index: int) -> dict[str, str]:
        """The container contract's environment for host ``index`` (``contract.host``)."""
        config = HostConfig(
            hyperparameters=dict(wire),
            resource_config=resource_config(
                hosts, hosts[index], cluster.instance_type, CONTAINER_INTERFACE
            ),
            input_data_config=channels,
        )
        built = host_environment(
            launch, index, config, machine, job_name=plan.job_name, framework=plan.framework
        )
        # What the script finds besides: a launcher's host steps write TF_CONFIG (PS).
        built.update(script_environment(launch.launcher, hosts, index))
        if line.module_dir is not None:
            built["SM_MODULE_DIR"] = line.module_dir
        return {name: value for name, value in built.items() if name not in line.dropped}

    first = environment(0)
    views = []
    for index in shown_indices(len(hosts), len(hosts)) if indices is None else indices:
        built = first if index == 0 else environment(index)
        sm = {name: value for name, value in built.items() if name.startswith("SM_")}
        arguments = command_line_arguments(split_hyperparameters(decode_hyperparameters(wire))[0])
        command = host_command(
            launch,
            index,
            image,
            plan.program,
            HostArguments(arguments, arguments),
            exported_names=[name for name in first if name.startswith("SM_")],
        )
        views.append(
            HostView(
                name=hosts[index],
                index=index,
                resource_config=json.loads(sm["SM_RESOURCE_CONFIG"]),
                sm_environment=sm,
                container_environment={
                    name: value for name, value in built.items() if not name.startswith("SM_")
                },
                job_environment=dict(plan.environment),
                launcher=launch.launcher.value,
                argv=command.argv,
                role=command.role,
                script_arguments=arguments,
            )
        )
    return views


def hosts_document(
    plan: Plan, limit: int = DEFAULT_SHOWN, line: SdkLine = SdkLine()
) -> dict[str, Any]:
    """``smdist plan --hosts --json``: the hosts shown, and how many are left out."""
    count = plan.spec.cluster.instance_count
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
        "processes_per_host": plan.topology.processes_per_host,
        "hosts": [view.to_dict() for view in host_views(plan, indices, line)],
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
    return (
        f"current_host {resources['current_host']}, hosts {_names(resources['hosts'])}, "
        f"{resources['current_instance_type']}, network interface "
        f"{resources['network_interface_name']}"
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


def hosts_text(plan: Plan, limit: int = DEFAULT_SHOWN, line: SdkLine = SdkLine()) -> list[str]:
    """``smdist plan --hosts``: one block per host shown, the hosts left out counted."""
    count = plan.spec.cluster.instance_count
    indices = shown_indices(count, limit)
    strategy = plan.spec.strategy
    lines = [
        f"{plan.job_name}: {strategy.kind} on {count} x {plan.spec.cluster.instance_type}, "
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
        names = [n for n in KEY_SM_VARIABLES if n in sm]
        names += sorted(n for n in sm if n.startswith(("SM_CHANNEL_", "SM_HP_")))
        for name in names:
            lines.append(f"    {name}={_short(sm[name])}")
        lines.append(f"    ({len(sm) - len(names)} more SM_* variables; --json lists them all)")
        for name, value in {**view.container_environment, **view.job_environment}.items():
            lines.append(f"    {name}={_short(value)}")
    return lines
