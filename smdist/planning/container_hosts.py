"""Each host of a planned job as SageMaker's container runs it; ``host_view`` shows these.

For a host it builds the environment the container gives the script (the toolkit's ``SM_*``
variables, what SageMaker and the framework container set besides them, ``TF_CONFIG`` under
the TensorFlow strategies, the job's own environment), the command the strategy's launcher
starts there (none on the hosts that wait for the first host's mpirun) and the script's own
arguments: exactly the job's hyperparameters as ``--name value``, as the toolkit renders them.

Everything comes from the container contract's builder (``smdist.contract.host``), the one the
local backend and smdist's v3 driver give their hosts, applied to the plan with SageMaker's
paths (``/opt/ml``), network interface and ports. The container differs by the SDK line that
sends the job (``SdkLine``): under v2 the image's toolkit starts the script (with the
TensorFlow estimator's ``model_dir``), under v3 a driver in the ``sm_drivers`` channel does,
from the v3 request's hyperparameters, in the ``code`` channel.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smdist import catalog
from smdist.contract.commands import (
    HostArguments,
    HostCommand,
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
    split_hyperparameters,
)
from smdist.contract.groups import channels_for_group
from smdist.contract.host import CONTAINER_INTERFACE, host_environment, host_resource_config
from smdist.planning.plan_value import REGION_PLACEHOLDER

if TYPE_CHECKING:
    from smdist.planning.plan import Plan


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


V2_LINE = SdkLine()  # the default line: the image's own training toolkit


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


def _channels(plan: Plan, group: str | None) -> dict[str, str]:
    """The channels a host of ``group`` gets: those sent to its group, or to every host."""
    inputs = plan.spec.inputs
    routed = {name: list(source.instance_groups) for name, source in inputs.items()}
    channels = {name: inputs[name].distribution for name in channels_for_group(routed, group)}
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
    plan: Plan, indices: list[int] | None = None, line: SdkLine = V2_LINE
) -> list[HostView]:
    """The hosts at ``indices`` (default: all) of ``plan``'s cluster, as SageMaker runs them
    when SDK ``line`` sends the job."""
    launch = plan.launch
    wire = dict(plan.wire_hyperparameters if line.hyperparameters is None else line.hyperparameters)
    image = image_assumed(plan)
    first = host_environment_of(plan, line, wire, 0)
    views = []
    for index in range(len(launch.all_hosts)) if indices is None else indices:
        built = first if index == 0 else host_environment_of(plan, line, wire, index)
        arguments = command_line_arguments(split_hyperparameters(decode_hyperparameters(wire))[0])
        command = host_command(
            launch,
            index,
            image,
            plan.program,
            HostArguments(arguments, arguments),
            exported_names=[name for name in first if name.startswith("SM_")],
        )
        views.append(_view(plan, index, built, command, arguments))
    return views


def host_environment_of(
    plan: Plan, line: SdkLine, wire: dict[str, str], index: int
) -> dict[str, str]:
    """The container contract's environment for host ``index`` (of every group's hosts,
    ``contract.host``), with what the launcher's host steps write for the script, as
    ``line``'s driver leaves it."""
    launch = plan.launch
    host = launch.all_hosts[index]
    group = launch.group_of(host)
    info = catalog.instance(group.instance_type if group else launch.instance_type)
    gpus = group.gpus_per_host if group else plan.gpus_per_host
    machine = Machine(num_cpus=info.vcpus if info else 0, num_gpus=gpus)
    added = dict.fromkeys(line.channels, "FullyReplicated")
    config = HostConfig(
        hyperparameters=dict(wire),
        resource_config=host_resource_config(launch, host, CONTAINER_INTERFACE),
        input_data_config=input_data_config({**_channels(plan, group and group.name), **added}),
    )
    built = host_environment(
        launch, index, config, machine, job_name=plan.job_name, framework=plan.framework,
        region=plan.spec.region or REGION_PLACEHOLDER,
    )  # fmt: skip
    # What the script finds besides: a launcher's host steps write TF_CONFIG (PS).
    rank = launch.node_rank(host)
    if rank is not None:
        built.update(script_environment(launch.launcher, list(launch.hosts), rank))
    if line.module_dir is not None:
        built["SM_MODULE_DIR"] = line.module_dir
    return {name: value for name, value in built.items() if name not in line.dropped}


def _view(
    plan: Plan, index: int, built: dict[str, str], command: HostCommand, arguments: list[str]
) -> HostView:
    """Host ``index``'s environment (``built``) sorted by who sets it, with its command."""
    sm = {name: value for name, value in built.items() if name.startswith("SM_")}
    return HostView(
        name=plan.launch.all_hosts[index],
        index=index,
        resource_config=json.loads(sm["SM_RESOURCE_CONFIG"]),
        sm_environment=sm,
        container_environment={
            name: value for name, value in built.items() if not name.startswith("SM_")
        },
        job_environment=dict(plan.environment),
        launcher=plan.launch.launcher.value,
        argv=command.argv,
        role=command.role,
        script_arguments=arguments,
    )
