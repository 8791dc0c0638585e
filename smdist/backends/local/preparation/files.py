"""A local job's files before it starts: the opening notes of its log, the code and channels
staged into every host, kept checkpoints restored (or set aside for a fresh start), and
``commands.txt``."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from smdist.backends.job_names import unique_job_name
from smdist.backends.local.data.channel_groups import channel_hosts, stage_channels_on_groups
from smdist.backends.local.data.channels import ChannelView, stage_channels
from smdist.backends.local.data.checkpoint_store import CheckpointStore, kept_files
from smdist.backends.local.data.file_systems import MAPPED, mount_channels, mounted_channels
from smdist.backends.local.options import LocalOptions
from smdist.backends.local.preparation.instance_choice import emulated_plan
from smdist.backends.local.preparation.layout import LocalLayout, plan_layout
from smdist.backends.local.preparation.not_emulated import not_emulated_notes
from smdist.backends.local.preparation.setup import PrepareError, job_region, prepare_notes
from smdist.packaging import bundle as packaging
from smdist.packaging.exclusions import mark_local_root

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.backends.local.hosts.names import HostNames
    from smdist.backends.local.processes.host_command import HostCommand
    from smdist.planning.plan import Plan


def local_layout(plan: Plan, job_name: str, options: LocalOptions) -> LocalLayout:
    """The plan on this machine, as the options ask (``plan_layout``): on the instance type
    they choose (``instance_choice``), its file system channels mapped to directories here
    (checked now: a SpecError before anything is made)."""
    emulated, instance_note = emulated_plan(plan, options.instance_type)
    mounted = mounted_channels(plan.spec.inputs, options.file_systems)
    layout = plan_layout(
        emulated,
        job_name=job_name,
        region=job_region(emulated),
        hosts=options.hosts,
        processes_per_host=options.processes_per_host,
        use_gpus=options.use_gpus,
    )
    layout.notes.extend([instance_note] if instance_note else [])
    layout.notes.extend(channel.describe() for channel in mounted.values())
    layout.notes.extend(not_emulated_notes(plan.spec))
    return layout


def make_job_dir(root: Path, job_name: str, spec_name: str) -> tuple[str, Path]:
    """The job's own directory under ``root``/jobs, made; a new name (returned with it) if
    one with ``job_name`` exists already."""
    job_dir = root / "jobs" / job_name
    while job_dir.exists():  # two jobs started within the same second
        job_name = unique_job_name(spec_name)
        job_dir = root / "jobs" / job_name
    mark_local_root(root)  # never packed into a later job's code, wherever it lies
    job_dir.mkdir(parents=True)
    return job_name, job_dir


def opening_notes(
    job_name: str,
    plan: Plan,
    layout: LocalLayout,
    names: HostNames,
    job_dir: Path,
    checkpoint_note: str | None,
) -> Iterator[str]:
    """What the log says first: the job and its hosts, then what differs from SageMaker."""
    spec = plan.spec
    emulated = layout.plan.spec.cluster.instance_type  # the one --instance-type chose
    yield (
        f"job {job_name}: {spec.strategy.kind} ({layout.launcher.description}), "
        f"{layout.hosts} host{'s' if layout.hosts > 1 else ''} x "
        f"{layout.processes_per_host} process{'es' if layout.processes_per_host > 1 else ''}"
        f" emulating {emulated}; directory {job_dir}"
    )
    yield from prepare_notes(plan, layout, names.names if not names.by_name else None)
    if checkpoint_note:
        yield f"note: {checkpoint_note}"


def stage_files(
    plan: Plan,
    hosts: list[EmulatedHost],
    job_dir: Path,
    in_place: bool,
    file_systems: Mapping[str, Path] | None = None,
) -> tuple[dict[str, str], list[ChannelView]]:
    """Every host's directories, its copy of the code (the upload's file list: what
    SageMaker's hosts would get) and its channels (``in_place``: the hosts have mount
    namespaces of their own, where channels can be read in place; ``file_systems``: the
    directories that stand for the file systems of fsx:// and efs:// channels); returns
    channel -> S3DistributionType, and the channels the hosts show read-only as they start."""
    spec = plan.spec
    mounted = mounted_channels(spec.inputs, file_systems or {})
    others = {name: channel for name, channel in spec.inputs.items() if name not in mounted}
    code = packaging.bundle(plan)
    groups = host_groups(plan, hosts)  # a channel sent to instance groups reaches their hosts
    try:
        for host in hosts:
            host.create(
                [c for c, s in spec.inputs.items() if host.index in channel_hosts(s, groups)]
            )
            packaging.stage(plan, host.code, code, bytecode=True)
        distributions, views = stage_channels_on_groups(
            others, hosts, groups, job_dir / "inputs", in_place, stage_channels
        )
        views += mount_channels(mounted, hosts, in_place)
    except (OSError, RuntimeError) as error:
        raise PrepareError(str(error)) from error
    distributions.update(dict.fromkeys(mounted, MAPPED))
    order = list(spec.inputs)  # as the job lists them
    return dict(sorted(distributions.items(), key=lambda item: order.index(item[0]))), views


def host_groups(plan: Plan, hosts: list[EmulatedHost]) -> list[str | None]:
    """Each host's instance group (None without groups): hosts are made in the order of the
    launch's hosts, every group's."""
    launch = plan.launch
    groups = [launch.group_of(launch.all_hosts[host.index]) for host in hosts]
    return [group.name if group else None for group in groups]


def restore_kept_checkpoints(
    store: CheckpointStore, s3_uri: str, hosts: list[EmulatedHost]
) -> list[str]:
    """Kept checkpoints into every host (as SageMaker syncs checkpoint_s3_uri), unless the
    job starts fresh; returns what happened, as lines for the log."""
    lines = []
    if store.holder is not None:
        lines.append(
            f"note: {store.source} is in use by job {store.holder}, still running: this job "
            f"keeps its checkpoints apart, in {store.target}, so the two never mix"
        )
    if not store.fresh:
        restored = store.restore(hosts)
        if restored:
            lines.append(
                f"restored {restored} checkpoint file(s) from {store.source} into every host "
                f"(checkpoint s3_uri {s3_uri}): the job resumes from them; to start fresh, "
                "run `smdist run --fresh ...` (smdist.fit: options={'fresh': True})"
            )
        return lines
    kept = kept_files(store.source)
    if kept and store.set_aside is not None:
        # Set aside, never deleted, and only once this job has checkpoints of its own.
        lines.append(
            f"starting fresh: the {kept} checkpoint file(s) in {store.source} are not "
            f"restored; they stay there until this job writes checkpoints, then move to "
            f"{store.set_aside}"
        )
    return lines


def write_commands_file(path: Path, commands: list[HostCommand]) -> None:
    """``commands.txt``: each host's command, as a shell would read it."""
    with open(path, "w") as handle:
        for command in commands:
            handle.write(f"{command.host.name}: {shlex.join(command.argv)}\n")


def command_notes(commands: list[HostCommand], job_dir: Path) -> Iterator[str]:
    """Each host's command for the log, ``HOST: COMMAND``, shortened where it is long (the
    full one is in ``commands.txt``)."""
    for command in commands:
        shown = shlex.join(command.argv)
        if len(shown) > 400:
            shown = shown[:400] + f" ... (full command in {job_dir}/commands.txt)"
        yield f"{command.host.name}: {shown}"
