"""File system channels (``fsx://`` and ``efs://``) on the emulated hosts: read in place from
the directory of this machine that the run maps to the file system (``--file-system ID=DIR``,
``LocalOptions.file_systems``).

DIR stands for what a client mounting the file system sees: an FSx for Lustre file system is
mounted by its mount name (``mount -t lustre <dns>@tcp:/<mount name> DIR``), an EFS file system
at its root; so a channel's ``DirectoryPath`` (``/<mount name>/<path>`` on FSx, ``/<path>`` on
EFS) is ``DIR/<path>``. On SageMaker every host mounts the one file system at
``/opt/ml/input/data/<channel>``, shared by all hosts, nothing copied. Here:

- hosts in namespaces of their own show a read-only channel (``access_mode: ro``, the default)
  as a read-only bind mount of the directory (a ``ChannelView``): a write is refused, as on
  SageMaker;
- a read-write channel, and every channel of hosts that share this machine's files, is a link
  from the host's channel folder to the directory: every host reads and writes the same files,
  as on the shared file system. Sharing this machine, a read-only channel is not enforced (a
  write through the link changes the directory); the log says so. Hosts in namespaces of their
  own have a ``/tmp`` of their own, where they see only the folder that holds the job's, so a
  read-write channel must lie outside ``/tmp`` or in that same folder.

Every problem (no mapping, a missing directory) is found before anything is made, exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from smdist.backends.local.data.channels import ChannelView
from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.local.hosts.folders import EmulatedHost
    from smdist.spec.sections import FileSystem, Input

TMP = Path("/tmp")
OPTION = "--file-system"
MAPPED = "FullyReplicated"  # inputdataconfig.json's distribution: every host sees it all


@dataclass(frozen=True)
class MountedChannel:
    """A file system channel and the directory of this machine that holds its data."""

    name: str
    uri: str
    file_system: FileSystem
    root: Path  # the file system's directory here (the mapping)
    directory: Path  # the channel's: root / the path below the mount name

    @property
    def read_only(self) -> bool:
        return self.file_system.access_mode != "rw"

    def describe(self) -> str:
        """The log's line for this channel."""
        mode = "read-only" if self.read_only else "read-write"
        return (
            f"inputs.{self.name}: {self.uri} ({self.file_system.type} {self.file_system.id}, "
            f"{mode}) is {self.directory} here ({OPTION} {self.file_system.id}={self.root})"
        )


def below_mount(file_system: FileSystem) -> PurePosixPath:
    """The channel's path in the mapped directory: its DirectoryPath without FSx for
    Lustre's mount name (the first component), as a client's mount shows it."""
    parts = PurePosixPath(file_system.directory_path).parts[1:]  # without the root "/"
    if file_system.type == "FSxLustre":
        parts = parts[1:]
    return PurePosixPath(*parts)


def _how_to_map(identifier: str) -> str:
    return (
        f"map it to a directory of this machine: smdist run {OPTION} {identifier}=/path/to/dir "
        f"(smdist.fit: options={{'file_systems': {{'{identifier}': '/path/to/dir'}}}})"
    )


def _resolve(name: str, channel: Input, mapping: Mapping[str, Path]) -> Problem | MountedChannel:
    """The channel's directory here, or the problem that keeps it from having one."""
    file_system = channel.file_system
    assert file_system is not None
    field, identifier = f"inputs.{name}.uri", file_system.id
    root = mapping.get(identifier)
    if root is None:
        return Problem(
            field, f"file system {identifier} has no directory here", channel.uri,
            _how_to_map(identifier),
        )  # fmt: skip
    root = root.expanduser().absolute()
    below = below_mount(file_system)
    if ".." in below.parts:
        return Problem(
            field, "the path climbs out of the file system ('..')", channel.uri,
            "a path below the mount without '..'",
        )  # fmt: skip
    if not root.is_dir():
        return Problem(
            field, f"file system {identifier} is mapped to {root} ({OPTION} {identifier}="
            f"{root}), which is not a directory on this machine", channel.uri,
            f"an existing directory: {OPTION} {identifier}=/path/to/dir",
        )  # fmt: skip
    directory = root / below
    if not directory.is_dir():
        return Problem(
            field, f"{directory} (the path {below} in {root}, which {OPTION} maps to "
            f"{identifier}) is not a directory", channel.uri,
            f"a directory under {root} (what a client's mount of {identifier} shows)",
        )  # fmt: skip
    return MountedChannel(name, channel.uri, file_system, root, directory)


def mounted_channels(
    inputs: Mapping[str, Input], mapping: Mapping[str, Path]
) -> dict[str, MountedChannel]:
    """The job's file system channels, each with its directory here; SpecError (exit 2)
    naming every channel whose file system is not mapped, or mapped to no directory."""
    found, problems = {}, []
    for name, channel in inputs.items():
        if channel.file_system is None:
            continue
        result = _resolve(name, channel, mapping)
        if isinstance(result, Problem):
            problems.append(result)
        else:
            found[name] = result
    if problems:
        raise SpecError(problems, CANNOT_RUN_HERE)
    return found


def _top_of_tmp(path: Path) -> Path | None:
    """The folder of /tmp that holds ``path``, or None outside /tmp."""
    resolved = path.resolve()
    if TMP not in resolved.parents:
        return None
    return TMP / resolved.relative_to(TMP).parts[0]


def _seen_by_namespaced_hosts(channel: MountedChannel, hosts: list[EmulatedHost]) -> None:
    """Hosts in namespaces of their own see of /tmp only the folder that holds the job."""
    top = _top_of_tmp(channel.directory)
    if top is None or not hosts or top == _top_of_tmp(hosts[0].base):
        return
    identifier = channel.file_system.id
    raise SpecError(
        [
            Problem(
                f"inputs.{channel.name}.uri",
                f"a read-write file system channel is a link to {channel.directory}, which "
                f"is in {top}: hosts in namespaces of their own have a /tmp of their own, "
                "where they see only the folder that holds the job",
                channel.uri,
                f"map {identifier} to a directory outside /tmp ({OPTION} {identifier}=DIR), "
                "put the job's --root in the same folder of /tmp, or run with --no-namespaces",
            )
        ],
        CANNOT_RUN_HERE,
    )


def _link(folder: Path, directory: Path) -> None:
    """``folder`` (the host's empty channel folder) as a link to ``directory``."""
    if folder.is_dir() and not folder.is_symlink():
        folder.rmdir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(directory, target_is_directory=True)


def mount_channels(
    channels: Mapping[str, MountedChannel], hosts: list[EmulatedHost], in_place: bool
) -> list[ChannelView]:
    """Every host's file system channels; ``in_place``: the hosts have mount namespaces of
    their own, where a read-only channel is a read-only mount (the views returned)."""
    views = []
    for channel in channels.values():
        if in_place and not channel.read_only:
            _seen_by_namespaced_hosts(channel, hosts)
        for host in hosts:
            folder = host.data_dir / channel.name
            if in_place and channel.read_only:
                folder.mkdir(parents=True, exist_ok=True)  # the mount point
                target = host.seen.data_dir / channel.name
                views.append(ChannelView(host.index, channel.directory, target))
            else:
                _link(folder, channel.directory)
    return views


def shared_machine_notes(inputs: Mapping[str, Input], hosts: list[EmulatedHost]) -> list[str]:
    """What the hosts do not reproduce of read-only file system channels that are links
    (hosts sharing this machine's files), one line for the log."""
    unguarded = [
        name
        for name, channel in inputs.items()
        if channel.file_system is not None
        and channel.file_system.access_mode != "rw"
        and hosts
        and (hosts[0].data_dir / name).is_symlink()
    ]
    if not unguarded:
        return []
    return [
        f"note: the read-only file system channel(s) {', '.join(unguarded)} are links to their "
        "directories: hosts sharing this machine's files cannot mount them read-only, so a "
        "write is not refused as on SageMaker and changes the directory (hosts in namespaces "
        "of their own, --namespaces, refuse it)"
    ]


__all__ = [
    "MAPPED",
    "MountedChannel",
    "below_mount",
    "mount_channels",
    "mounted_channels",
    "shared_machine_notes",
]
